//! `review`: one library call (`phlo_transform_exec::review::review`), printed as Markdown (a
//! pull-request comment) or JSON; the exit code follows `--fail-on`.

use clap::{Args, ValueEnum};
use phlo_transform_exec::review::{self, FailOn};

use super::render::{fatal, Output};
use super::{compile_refreshed, Paths, EXIT_FAILURES, EXIT_OK};

#[derive(Args, Debug)]
pub struct ReviewArgs {
    /// The Git ref the change is compared with (its merge-base with HEAD).
    #[arg(long, value_name = "GIT_REF", default_value = "main")]
    pub base: String,
    /// `markdown` (a pull-request comment) or `json` (the same report; as `--json`).
    #[arg(long, value_enum, default_value_t)]
    pub format: ReviewFormat,
    /// Base rows above which a model's data diff samples instead of comparing every row.
    #[arg(long, value_name = "N", default_value_t = review::DEFAULT_DIFF_ROWS)]
    pub diff_rows: u64,
    /// Exit 1 when the review finds it: `breaking` (a BREAKING schema change),
    /// `diff-policy` (a data diff policy violation), `tests` (a test that failed at its
    /// current version). Repeatable or comma-separated.
    #[arg(long, value_enum, value_delimiter = ',', value_name = "CONDITION")]
    pub fail_on: Vec<FailOnArg>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum ReviewFormat {
    #[default]
    Markdown,
    Json,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FailOnArg {
    Breaking,
    DiffPolicy,
    Tests,
}

impl From<FailOnArg> for FailOn {
    fn from(f: FailOnArg) -> Self {
        match f {
            FailOnArg::Breaking => FailOn::Breaking,
            FailOnArg::DiffPolicy => FailOn::DiffPolicy,
            FailOnArg::Tests => FailOn::Tests,
        }
    }
}

/// Compile errors do not stop a review: the models they reach are reported blocked and the
/// errors are shown (stderr, or the JSON envelope).
pub async fn review(paths: &Paths, args: &ReviewArgs, json: bool) -> u8 {
    let json = json || args.format == ReviewFormat::Json;
    let c = match compile_refreshed(paths) {
        Ok(c) => c,
        Err(d) => return fatal(d, json),
    };
    let mut out = Output::new(json).with_workspace(&c.workspace);
    out.diagnostics(c.diagnostics.iter().cloned());
    let request = review::Request {
        compilation: c,
        target: paths.target(),
        base: &args.base,
        diff_rows: args.diff_rows,
    };
    let mut report = match review::review(request).await {
        Ok(report) => report,
        Err(diags) => return out.fail(diags),
    };
    out.diagnostics(std::mem::take(&mut report.warnings));
    let fail_on: Vec<FailOn> = args.fail_on.iter().map(|&f| f.into()).collect();
    let refusals = report.refusals(&fail_on);
    let code = if refusals.is_empty() {
        EXIT_OK
    } else {
        EXIT_FAILURES
    };
    out.diagnostics(refusals);
    out.report(&report);
    code
}
