//! Continuing earlier runs (SPEC §65a): finding a run by id prefix, and the selection
//! `run --resume` (the interrupted run again, under its own id) and `run --retry-failed` (a new
//! run over a finished run's failed work) start from.

use crate::Continuation;
use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;
use phlo_transform_plan::{read_stored, SelectorSpec};
use phlo_transform_state::{RunRecord, StateError, StateStore};
use std::collections::BTreeSet;

fn unavailable(e: StateError) -> Diagnostic {
    Diagnostic::error(codes::STATE_UNAVAILABLE, e.message)
        .with_help("check --state / PHLO_STATE_URL")
}

const CANDIDATES: i64 = 10;

/// The one run whose id is `prefix` or starts with it: Y003 when none, Y004 when several.
pub async fn find_run(store: &dyn StateStore, prefix: &str) -> Result<RunRecord, Diagnostic> {
    let found = store
        .runs_with_prefix(prefix, CANDIDATES + 1)
        .await
        .map_err(unavailable)?;
    let run = match found.as_slice() {
        [] => {
            let recent = store.runs(5).await.map_err(unavailable)?;
            let mut d = Diagnostic::error(codes::UNKNOWN_RUN, format!("no run `{prefix}`"))
                .with_help("`phlo-transform state runs` lists the recorded runs");
            for r in recent {
                d = d.with_note(format!("recent run: {}", candidate(&r)));
            }
            return Err(d);
        }
        [one] => one.clone(),
        many => {
            let mut d = Diagnostic::error(
                codes::AMBIGUOUS_RUN,
                format!(
                    "`{prefix}` is the prefix of {}{} runs",
                    if many.len() as i64 > CANDIDATES {
                        "more than "
                    } else {
                        ""
                    },
                    many.len().min(CANDIDATES as usize)
                ),
            )
            .with_help("give more characters of the run id (candidates above, newest first)");
            for r in many.iter().take(CANDIDATES as usize) {
                d = d.with_note(candidate(r));
            }
            return Err(d);
        }
    };
    Ok(run)
}

/// `run --resume <run>`: the interrupted run and the selection it was planned with. Only a
/// run still `running` (its process died) or `cancelled` can be resumed.
pub async fn resume(
    store: &dyn StateStore,
    prefix: &str,
) -> Result<(SelectorSpec, Continuation), Diagnostic> {
    let run = find_run(store, prefix).await?;
    match run.status.as_str() {
        "running" | "cancelled" | "interrupted" => {}
        finished => {
            let help = if finished == "failed" {
                format!(
                    "a failed run is continued by a new one: `phlo-transform run --retry-failed {}`",
                    run.run_id
                )
            } else {
                "a passed run has nothing left to do".to_string()
            };
            return Err(Diagnostic::error(
                codes::RUN_NOT_CONTINUABLE,
                format!("run `{}` finished ({finished}): only an interrupted run (running or cancelled) can be resumed", run.run_id),
            )
            .with_help(help));
        }
    }
    let body = store.load_plan(&run.plan_id).await.map_err(unavailable)?;
    let plan = read_stored(&run.plan_id, body).map_err(|d| {
        d.with_note(format!(
            "run `{}` was planned as `{}`",
            run.run_id, run.plan_id
        ))
        .with_help("start a new run instead")
    })?;
    Ok((plan.selection.spec, Continuation::Resume(run)))
}

/// `run --retry-failed <run>`: a selection of the finished run's failed, blocked and cancelled
/// models and the models of its tests that did not pass (their tests re-verify); the planner
/// adds the dependencies they still need.
pub async fn retry_failed(
    store: &dyn StateStore,
    prefix: &str,
) -> Result<(SelectorSpec, Continuation), Diagnostic> {
    let run = find_run(store, prefix).await?;
    if matches!(run.status.as_str(), "running" | "interrupted") {
        return Err(Diagnostic::error(
            codes::RUN_NOT_CONTINUABLE,
            format!("run `{}` has not finished", run.run_id),
        )
        .with_help(format!(
            "an interrupted run is continued under its own id: `phlo-transform run --resume {}`",
            run.run_id
        )));
    }
    // A state that cannot be read stops the retry; a plan of another format (L012) or that
    // cannot be read (L013) only costs the failed tests' models, which only it names: the
    // failed models are still retried.
    let body = store.load_plan(&run.plan_id).await.map_err(unavailable)?;
    let plan = read_stored(&run.plan_id, body).ok();
    let nodes = store.run_nodes(&run.run_id).await.map_err(unavailable)?;
    let unfinished = |s: &str| matches!(s, "failed" | "blocked" | "cancelled" | "error");
    let mut include = BTreeSet::new();
    for n in nodes.iter().filter(|n| unfinished(&n.status)) {
        if n.kind == "model" {
            include.insert(n.node.clone());
        } else if let Some(test) = plan
            .as_ref()
            .and_then(|p| p.tests.iter().find(|t| t.name == n.node))
        {
            include.extend(test.targets.iter().cloned());
        }
    }
    if include.is_empty() {
        return Err(Diagnostic::error(
            codes::RUN_NOT_CONTINUABLE,
            format!(
                "run `{}` has no failed, blocked or cancelled work",
                run.run_id
            ),
        )
        .with_help("nothing to retry; `phlo-transform run` plans what changed since"));
    }
    let spec = SelectorSpec {
        include: include.into_iter().collect(),
        ..SelectorSpec::default()
    };
    Ok((spec, Continuation::RetryFailed(run.run_id)))
}

fn candidate(r: &RunRecord) -> String {
    format!("{}  {}  {} {}", r.run_id, r.started_at, r.command, r.status)
}
