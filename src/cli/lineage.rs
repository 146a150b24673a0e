//! `lineage` and `impact`: reports over the compilation's one `LineageGraph` (SPEC §55–57).

use clap::ValueEnum;
use phlo_transform_compiler::artifacts::LineageArtifacts;
use phlo_transform_compiler::lineage::Target;
use phlo_transform_compiler::Compilation;
use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;
use phlo_transform_exec::environments::report::{EnvironmentReads, InEnvironment};
use phlo_transform_plan::lineage_scope::{impact_targets, LineageScope};

use super::render::{self, fatal, Output, Report};
use super::selection::ScopeArgs;
use super::{compile, Paths, EXIT_OK};

/// What `lineage` prints.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum LineageFormat {
    /// A readable chain (or the report as JSON with --json).
    #[default]
    Text,
    /// The canonical lineage document (nodes and edges), scoped to the target.
    Graph,
    /// The OpenLineage design-time document: a JSON array of JobEvents and DatasetEvents.
    Openlineage,
}

/// Compiles; lineage is reported even when some models have errors (their lineage is
/// `unknown`), but the errors are shown.
fn compile_for_lineage(
    paths: &Paths,
    json: bool,
) -> Result<(&'static Compilation, Output<'static>), u8> {
    let c = compile(paths).map_err(|d| fatal(d, json))?;
    let mut out = Output::new(json).with_workspace(&c.workspace);
    out.diagnostics(c.diagnostics.iter().cloned());
    Ok((c, out))
}

pub async fn lineage(
    paths: &Paths,
    target: Option<&str>,
    format: LineageFormat,
    scope: &ScopeArgs,
    json: bool,
) -> u8 {
    if let (Some(r), LineageFormat::Graph | LineageFormat::Openlineage) = (&paths.reference, format)
    {
        return fatal(
            Diagnostic::error(
                codes::ENVIRONMENTS_UNSUPPORTED,
                format!("--ref {r}: the lineage documents (--format graph, openlineage) describe the workspace, not one environment"),
            )
            .with_help("`lineage --ref <ref>` (text or --json) adds what the environment reads"),
            json,
        );
    }
    let (c, mut out) = match compile_for_lineage(paths, json) {
        Ok(compiled) => compiled,
        Err(code) => return code,
    };
    let g = c.lineage();
    // Asking for lineage writes lineage.json and openlineage.json when they are not current.
    if let Err(d) = super::commands::write_lineage_artifacts(paths, c, LineageArtifacts::Wanted) {
        out.diagnostics([d]);
    }
    // Selectors scope the output to the selected models' lineage.
    let scope = match LineageScope::new(c, target, &scope.spec_with(&[])) {
        Ok(scope) => scope,
        Err(diags) => return out.fail(diags),
    };
    // `--ref`: the physical table (and version) the environment reads for each model in scope.
    let environment = match &paths.reference {
        None => None,
        Some(r) => {
            let datasets = scope.datasets(c);
            let reads = match paths.target().environments().await {
                Ok(envs) => envs.reads(r, datasets.as_ref()).await,
                Err(d) => Err(d),
            };
            match reads {
                Ok(reads) => Some(reads),
                Err(d) => return out.fail([d]),
            }
        }
    };
    match (format, scope.target) {
        // Documents whose shape is fixed (the lineage graph, OpenLineage): no envelope.
        (LineageFormat::Graph, _) => render::document(&g.document_for(scope.nodes.as_ref())),
        (LineageFormat::Openlineage, _) => {
            let config = phlo_transform_openlineage::OpenLineageConfig::from_env(
                &c.workspace,
                &paths.warehouse,
            );
            let datasets = scope.datasets(c);
            let keep = |name: &str| datasets.as_ref().is_none_or(|s| s.contains(name));
            render::document(&phlo_transform_openlineage::design_events_for(
                c, &config, &keep,
            ));
        }
        (LineageFormat::Text, None) => {
            report_in(out, c.lineage_overview(scope.nodes.as_ref()), environment)
        }
        (LineageFormat::Text, Some(Target::Dataset(d))) => {
            report_in(out, g.model_report(d), environment)
        }
        (LineageFormat::Text, Some(Target::Column(col))) => {
            report_in(out, g.column_report(col), environment)
        }
    }
    EXIT_OK
}

/// `lineage --diff <git-ref> [--ref <candidate>]`: the work tree's lineage against the
/// workspace at merge-base(ref, HEAD); with `--ref`, recorded as the candidate's evidence.
pub async fn lineage_diff(paths: &Paths, reference: &str, json: bool) -> u8 {
    let (c, out) = match compile_for_lineage(paths, json) {
        Ok(compiled) => compiled,
        Err(code) => return code,
    };
    match phlo_transform_exec::lineage_diff::lineage_diff_in(c, &paths.target(), reference).await {
        Ok(report) => {
            out.report(&report);
            EXIT_OK
        }
        Err(d) => out.fail([d]),
    }
}

/// Prints `report`, with what the environment reads when `--ref` named one.
fn report_in<R: Report>(out: Output, report: R, environment: Option<EnvironmentReads>) {
    match environment {
        None => out.report(&report),
        Some(environment) => out.report(&InEnvironment {
            report,
            environment,
        }),
    }
}

pub async fn impact(paths: &Paths, target: Option<&str>, scope: &ScopeArgs, json: bool) -> u8 {
    let (c, out) = match compile_for_lineage(paths, json) {
        Ok(compiled) => compiled,
        Err(code) => return code,
    };
    let targets = match impact_targets(c, target, &scope.spec_with(&[])) {
        Ok(targets) => targets,
        Err(diags) => return out.fail(diags),
    };
    out.report(&c.lineage().impact_of_all(&targets));
    EXIT_OK
}
