//! `diff <model>` and `diff --from <ref> --to <ref>`: argument parsing and printing; the
//! library (`phlo_transform_exec::diff`, `environments::branch_diff`) resolves the sides, key
//! and policy, and `phlo_transform_diff` compares.

use clap::Args;
use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;
use phlo_transform_diff::{DiffOptions, Strategy};
use phlo_transform_exec::diff::{diff_model, DiffArgs};
use phlo_transform_exec::CancelHandle;
use std::path::PathBuf;

use super::commands::{compile_or_report, fatal};
use super::{Paths, EXIT_FAILURES, EXIT_OK};

#[derive(Args, Debug)]
pub struct DiffCliArgs {
    /// Model name (`assay.results`) or a unique suffix of it (`results`). Without it,
    /// `--from <ref> --to <ref>` compares two environments, every dataset (a branch diff).
    pub model: Option<String>,
    /// Base side: `materialized` (default; on Trino + Nessie `ref:<--ref, else main>`),
    /// `workspace`, `delta:<version>`, `delta:<RFC 3339 time>`, a recorded model version (6+
    /// hex digits), `ref:<reference>` or `iceberg:<snapshot id>` (Trino + Nessie); without a
    /// model, the base reference.
    #[arg(long, value_name = "SIDE")]
    pub from: Option<String>,
    /// Candidate side (default `workspace`: the model's current SQL, run where its tables
    /// live — the embedded engine or the warehouse — over the materialised upstream
    /// relations; nothing is written), or any base side; without a model, the candidate
    /// reference.
    #[arg(long, value_name = "SIDE")]
    pub to: Option<String>,
    /// Key columns (default: the model's @key, else the plan's grain).
    #[arg(long, value_delimiter = ',', value_name = "COLUMNS")]
    pub key: Vec<String>,
    /// Compare every row (same as --strategy full); large tables otherwise default to a sample.
    #[arg(long, conflicts_with = "strategy")]
    pub full: bool,
    /// `full`, `partition`, `aggregate` or `sampled`.
    #[arg(long, value_name = "STRATEGY")]
    pub strategy: Option<String>,
    /// Floats equal when within 10^-N of each other (decimal types are always exact).
    #[arg(long, value_name = "N")]
    pub decimals: Option<u32>,
    /// Compare candidate column CAND as base column BASE (repeatable).
    #[arg(long = "map", value_name = "CAND=BASE")]
    pub map: Vec<String>,
    /// Base columns left out of the value comparison.
    #[arg(long, value_delimiter = ',', value_name = "COLUMNS")]
    pub exclude: Vec<String>,
    /// Fraction of keys the sampled strategy compares (default 0.01).
    #[arg(long, value_name = "FRACTION")]
    pub sample: Option<f64>,
    /// Sample rows shown of each kind.
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub samples: usize,
    /// Write the differing rows to this Parquet file.
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Base rows above which a table is large: the automatic strategy samples it, and on a
    /// warehouse a keyed full diff runs there instead of fetching both sides.
    #[arg(long, value_name = "ROWS", default_value_t = DiffOptions::default().large_table_rows)]
    pub large_table_rows: u64,
}

impl DiffCliArgs {
    /// A branch diff takes `--from`, `--to` and `--full` only.
    fn branch_refs(&self) -> Result<(&str, &str), Diagnostic> {
        let model_only = !self.key.is_empty()
            || self.strategy.is_some()
            || self.decimals.is_some()
            || !self.map.is_empty()
            || !self.exclude.is_empty()
            || self.sample.is_some()
            || self.output.is_some()
            || self.large_table_rows != DiffOptions::default().large_table_rows;
        match (&self.from, &self.to) {
            (Some(from), Some(to)) if !model_only => Ok((from, to)),
            (Some(_), Some(_)) => Err(Diagnostic::error(
                codes::DIFF_INVALID_OPTION,
                "a branch diff (no model) takes --from, --to and --full only",
            )
            .with_help("name a model to diff it with --key, --strategy, --map, --exclude, --decimals, --sample, --output or --large-table-rows")),
            _ => Err(Diagnostic::error(
                codes::DIFF_INVALID_OPTION,
                "diff without a model compares two references: give --from <ref> and --to <ref>",
            )
            .with_help("`diff --from main --to dev`, or `diff <model>` to diff one model")),
        }
    }

    fn library_args(&self, model: &str) -> Result<DiffArgs, Diagnostic> {
        let strategy = match (&self.strategy, self.full) {
            (_, true) => Some(Strategy::Full),
            (Some(s), _) => Some(Strategy::parse(s).ok_or_else(|| {
                Diagnostic::error(
                    codes::DIFF_INVALID_OPTION,
                    format!("unknown diff strategy `{s}`"),
                )
                .with_help("use full, partition, aggregate or sampled")
            })?),
            (None, false) => None,
        };
        let mut options = DiffOptions {
            decimals: self.decimals,
            exclude: self.exclude.clone(),
            sample_limit: self.samples,
            keep_differing_rows: self.output.is_some(),
            large_table_rows: self.large_table_rows,
            ..DiffOptions::default()
        };
        if let Some(f) = self.sample {
            options.sample_fraction = f;
        }
        for m in &self.map {
            let Some((cand, base)) = m
                .split_once('=')
                .filter(|(c, b)| !c.is_empty() && !b.is_empty())
            else {
                return Err(Diagnostic::error(
                    codes::DIFF_INVALID_OPTION,
                    format!("--map `{m}` is not CANDIDATE=BASE"),
                )
                .with_help(
                    "e.g. --map amount_usd=amount compares candidate amount_usd with base amount",
                ));
            };
            options
                .column_map
                .insert(cand.to_string(), base.to_string());
        }
        Ok(DiffArgs {
            model: model.to_string(),
            from: self.from.clone(),
            to: self.to.clone(),
            key: self.key.clone(),
            strategy,
            options,
            output: self.output.clone(),
            cancel: CancelHandle::default(),
        })
    }
}

pub async fn diff(paths: &Paths, args: &DiffCliArgs, json: bool) -> u8 {
    let Some(model) = &args.model else {
        return branch_diff(paths, args, json).await;
    };
    let mut library_args = match args.library_args(model) {
        Ok(a) => a,
        Err(d) => return fatal(d, json),
    };
    let (c, mut out) = match compile_or_report(paths, json) {
        Ok(compiled) => compiled,
        Err(code) => return code,
    };
    // A unique suffix names the model, as for inspect, explain and selectors.
    match c.resolve_model(model) {
        Ok(i) => library_args.model = c.models[i].name.to_string(),
        Err(d) => return out.fail([d]),
    }
    let mut warnings = Vec::new();
    let on_interrupt = tokio::spawn(super::execute::interrupt(
        library_args.cancel.clone(),
        "diff",
    ));
    let report = diff_model(c, &paths.target(), library_args, &mut warnings).await;
    on_interrupt.abort();
    out.diagnostics(warnings);
    let report = match report {
        Ok(report) => report,
        Err(d) => return out.fail([d]),
    };
    out.diagnostics(report.warnings.iter().cloned());
    out.diagnostics(report.policy.violations.iter().cloned());
    let passed = report.policy.passed;
    out.report(&report);
    if passed {
        EXIT_OK
    } else {
        EXIT_FAILURES
    }
}

/// `diff --from <ref> --to <ref> [--full]`: every dataset of two environments compared,
/// recorded as branch-diff evidence; exit 1 when a changed model violates its diff policy.
async fn branch_diff(paths: &Paths, args: &DiffCliArgs, json: bool) -> u8 {
    let (from, to) = match args.branch_refs() {
        Ok(refs) => refs,
        Err(d) => return fatal(d, json),
    };
    if let Some(r) = &paths.reference {
        return fatal(
            Diagnostic::error(
                codes::ENVIRONMENTS_UNSUPPORTED,
                format!("--ref {r}: a branch diff names its references with --from and --to"),
            )
            .with_help("drop --ref: `diff --from main --to dev`"),
            json,
        );
    }
    let (c, mut out) = match compile_or_report(paths, json) {
        Ok(compiled) => compiled,
        Err(code) => return code,
    };
    let envs = match paths.target().environments().await {
        Ok(envs) => envs,
        Err(d) => return out.fail([d]),
    };
    let report = match envs.branch_diff(c, from, to, args.full).await {
        Ok(r) => r,
        Err(d) => return out.fail([d]),
    };
    out.diagnostics(report.warnings.iter().cloned());
    for d in report.datasets.iter().filter_map(|d| d.data.as_ref()) {
        out.diagnostics(d.warnings.iter().cloned());
        out.diagnostics(d.policy.violations.iter().cloned());
    }
    let passed = report.passed;
    out.report(&report);
    if passed {
        EXIT_OK
    } else {
        EXIT_FAILURES
    }
}
