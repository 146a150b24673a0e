//! The read plane (`GET /v1/...`): each answers from the live compilation and the state
//! store through the library call the command line makes, and returns the same document as
//! that command's `--json` ([`Envelope`]: the report's fields, then `diagnostics`). Reads
//! change nothing: no plan is stored, no artifact written.

use crate::api_error::ApiError;
use crate::context::Context;
use crate::http::Call;
use phlo_transform_compiler::lineage::Target;
use phlo_transform_compiler::Compilation;
use phlo_transform_core::Diagnostic;
use phlo_transform_exec::inspect_command::{self, InspectOptions, Inspected};
use phlo_transform_exec::plan_command;
use phlo_transform_exec::{gates, history, planning};
use phlo_transform_plan::lineage_scope::{impact_targets, LineageScope};
use phlo_transform_plan::SelectorSpec;
use serde::Serialize;
use serde_json::Value;

/// A read's document.
pub type Read = Result<Value, ApiError>;

fn envelope(report: &impl Serialize, diagnostics: &[Diagnostic]) -> Read {
    Ok(crate::document::envelope(report, diagnostics))
}

/// The selection of `select`, `exclude`, `tag` and `workflow` (each repeatable or
/// comma-separated), as the command line's selector flags.
pub fn selection(call: &Call) -> Result<SelectorSpec, ApiError> {
    Ok(SelectorSpec {
        include: call.list("select"),
        exclude: call.list("exclude"),
        tags: call.list("tag"),
        workflows: call.list("workflow"),
        upstream: call.flag("upstream")?,
        downstream: call.flag("downstream")?,
        ..SelectorSpec::default()
    })
}

/// `GET /v1/check`: `check --json`.
pub fn check(cx: &Context) -> Read {
    let published = cx.snapshot()?;
    envelope(
        &published.compilation.check_report(),
        &published.diagnostics,
    )
}

/// `GET /v1/models`: `list --json`.
pub fn models(cx: &Context, call: &Call) -> Read {
    let published = cx.snapshot()?;
    let c = &published.compilation;
    let spec = selection(call)?;
    let target = cx.target(None);
    let report = cx.runtime.block_on(planning::list(c, &target, &spec))?;
    envelope(&report, &c.diagnostics.iter().cloned().collect::<Vec<_>>())
}

/// `GET /v1/models/<model>`: `inspect <model> --json` (`?config=true`: `--config`); a source's
/// name inspects the source.
pub fn inspect(cx: &Context, call: &Call, name: &str) -> Read {
    let published = cx.snapshot()?;
    let c = &published.compilation;
    let options = InspectOptions {
        config: call.flag("config")?,
        sql: call.flag("sql")?,
    };
    let inspected = cx.runtime.block_on(async {
        match call.param("environment") {
            None => {
                let opened = cx.inspect_context(&published).await?;
                inspect_command::inspect_with(c, &opened, name, options).await
            }
            Some(environment) => {
                inspect_command::inspect(c, &cx.target(Some(environment)), name, options).await
            }
        }
        .map_err(ApiError::from)
    })?;
    let diagnostics = inspected.diagnostics(c);
    match &inspected {
        Inspected::Model(report) => envelope(report.as_ref(), &diagnostics),
        Inspected::Source(report) => envelope(report, &diagnostics),
        Inspected::Sql(report) => envelope(report, &diagnostics),
    }
}

fn all_diagnostics(c: &Compilation) -> Vec<Diagnostic> {
    c.diagnostics.iter().cloned().collect()
}

/// `GET /v1/lineage`: `lineage [<target>] --json` (`?target=` a model, source or column;
/// selectors scope it), or the lineage document with `?format=graph`.
pub fn lineage(cx: &Context, call: &Call) -> Read {
    let published = cx.snapshot()?;
    let c = &published.compilation;
    let g = c.lineage();
    let scope = LineageScope::new(c, call.param("target"), &selection(call)?)?;
    match (call.param("format"), scope.target) {
        (Some("graph"), _) => serde_json::to_value(g.document_for(scope.nodes.as_ref()))
            .map_err(|e| ApiError::bad_request(e.to_string())),
        (Some(other), _) if other != "text" => Err(ApiError::bad_request(format!(
            "`format` is `text` or `graph`, not {other:?}"
        ))),
        (_, None) => envelope(
            &c.lineage_overview(scope.nodes.as_ref()),
            &all_diagnostics(c),
        ),
        (_, Some(Target::Dataset(d))) => envelope(&g.model_report(d), &all_diagnostics(c)),
        (_, Some(Target::Column(col))) => envelope(&g.column_report(col), &all_diagnostics(c)),
    }
}

/// `GET /v1/graph`: the whole workspace's lineage document (`lineage --format graph`).
pub fn graph(cx: &Context) -> Read {
    let published = cx.snapshot()?;
    serde_json::to_value(published.compilation.lineage().document_for(None))
        .map_err(|e| ApiError::bad_request(e.to_string()))
}

/// `GET /v1/impact`: `impact [<target>] --json`.
pub fn impact(cx: &Context, call: &Call) -> Read {
    let published = cx.snapshot()?;
    let c = &published.compilation;
    let targets = impact_targets(c, call.param("target"), &selection(call)?)?;
    envelope(&c.lineage().impact_of_all(&targets), &all_diagnostics(c))
}

/// `GET /v1/lineage-diff?base=<git-ref>`: `lineage --diff <git-ref> --json`.
pub fn lineage_diff(cx: &Context, call: &Call) -> Read {
    let base = call
        .param("base")
        .ok_or_else(|| ApiError::bad_request("`base` (a Git ref) is required"))?;
    let published = cx.snapshot()?;
    let c = &published.compilation;
    let report = phlo_transform_exec::lineage_diff::lineage_diff(c, cx.adapter.as_deref(), base)?;
    envelope(&report, &all_diagnostics(c))
}

/// `GET /v1/plan[?environment=<ref>]`: what `plan --json` would plan, as a preview: the state
/// is only read and the plan is not stored (`plan` on the command line stores it for
/// `apply`). Over compile errors, the blocked plan `plan` reports.
pub fn plan(cx: &Context, call: &Call) -> Read {
    let published = cx.snapshot()?;
    let c = &published.compilation;
    let spec = SelectorSpec {
        force: call.flag("force")?,
        ..selection(call)?
    };
    let target = cx.target(call.param("environment"));
    let (planned, mut warnings) = cx
        .runtime
        .block_on(plan_command::preview(c, &target, &spec))?;
    warnings.extend(all_diagnostics(c));
    envelope(&planned, &warnings)
}

/// `GET /v1/state/runs?limit=`: `state runs --json`.
pub fn runs(cx: &Context, call: &Call) -> Read {
    let limit = call.number("limit", 20)?.max(1);
    let target = cx.target(None);
    cx.runtime.block_on(async {
        let store = target.open_state_read_only().await?;
        let report = history::runs(store.as_ref(), cx.files.state.display(), limit).await?;
        envelope(&report, &[])
    })
}

/// `GET /v1/state/runs/<run>`: `state show <run> --json` (a unique prefix is enough).
pub fn run(cx: &Context, run: &str) -> Read {
    let target = cx.target(None);
    cx.runtime.block_on(async {
        let store = target.open_state_read_only().await?;
        envelope(&history::show(store.as_ref(), run).await?, &[])
    })
}

/// `GET /v1/state/models/<model>?limit=`: `state model <model> --json`.
pub fn model_history(cx: &Context, call: &Call, model: &str) -> Read {
    let limit = call.number("limit", 20)?.max(1);
    let target = cx.target(None);
    cx.runtime.block_on(async {
        let store = target.open_state_read_only().await?;
        envelope(&history::model(store.as_ref(), model, limit).await?, &[])
    })
}

/// `GET /v1/state/failures?limit=`: `state failures --json`.
pub fn failures(cx: &Context, call: &Call) -> Read {
    let limit = call.number("limit", 20)?.max(1);
    let target = cx.target(None);
    cx.runtime.block_on(async {
        let store = target.open_state_read_only().await?;
        envelope(&history::failures(store.as_ref(), limit).await?, &[])
    })
}

/// `GET /v1/gates[?model=]`: `gates [<model>] --json`.
pub fn gates(cx: &Context, call: &Call) -> Read {
    let published = cx.snapshot()?;
    let c = &published.compilation;
    let target = cx.target(None);
    cx.runtime.block_on(async {
        let store = target.open_state_read_only().await?;
        let report = gates::gates(c, store.as_ref(), call.param("model")).await?;
        envelope(&report, &all_diagnostics(c))
    })
}

/// `GET /v1/refs`: `ref list --json`.
pub fn refs(cx: &Context) -> Read {
    let target = cx.target(None);
    cx.runtime.block_on(async {
        let report = target.environments().await?.list_report().await?;
        envelope(&report, &[])
    })
}

/// `GET /v1/refs/<ref>`: `ref show <ref> --json` (its pointers, run, promotions and
/// rollbacks).
pub fn reference(cx: &Context, name: &str) -> Read {
    let target = cx.target(None);
    cx.runtime.block_on(async {
        let environments = target.environments().await?;
        let report = environments
            .detail_report(name, &cx.files.warehouse)
            .await?;
        envelope(&report, &[])
    })
}

/// `GET /v1/state/evidence/<ref>[?kind=]`: `state evidence <ref> --json` (the branch diffs,
/// lineage diffs and environment states recorded about it).
pub fn evidence(cx: &Context, call: &Call, reference: &str) -> Read {
    let target = cx.target(None);
    cx.runtime.block_on(async {
        let store = target.open_state_read_only().await?;
        let report = history::evidence(store.as_ref(), reference, call.param("kind")).await?;
        envelope(&report, &[])
    })
}
