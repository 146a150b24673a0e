//! The data tests, run after the models. A test over a model that did not materialise is
//! blocked; once the run has stopped (`--fail-fast`, an interrupt) the tests that were never
//! started are cancelled. A test that passed at its current version (its SQL, the versions of
//! the models it reads and the states of the sources it reads) is `cached`, not run again.

use crate::failure::Category;
use crate::recorder::Recorder;
use crate::report::{ErrorInfo, TestResult};
use crate::scheduler::NodeState;
use crate::CancelHandle;
use phlo_transform_adapter::{Adapter, InFlight};
use phlo_transform_compiler::resolve::Target;
use phlo_transform_compiler::{Compilation, CompiledTest};
use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Fingerprint;
use phlo_transform_plan::Plan;
use phlo_transform_state::StateError;
use std::collections::HashMap;
use std::time::Instant;

/// Tests that passed before: name → (the version it passed at, the run it passed in).
pub(crate) type Passes = HashMap<String, (String, String)>;

/// The version of a test: its query and the versions of what it reads. `None` when a model it
/// reads has no version (errors) or a source no state: such a test always runs.
pub(crate) fn test_version(c: &Compilation, test: &CompiledTest) -> Option<String> {
    let mut f = Fingerprint::new("phlo-transform/test-version/1");
    f.field("query", test.query.to_string());
    for r in &test.relations {
        match r.target.as_ref()? {
            Target::Model(i) => {
                let m = &c.models[*i];
                f.field("model", m.name.as_str())
                    .field("version", &m.version.as_ref()?.version);
            }
            Target::Source(s) => {
                f.field("source", s)
                    .field("state", &c.catalog.sources.get(s)?.state);
            }
        }
    }
    Some(f.finish())
}

/// The tests the latest earlier run of `environment` passed (or carried as cached), with the
/// version each passed at.
pub(crate) async fn earlier_passes(
    state: &dyn phlo_transform_state::StateStore,
    environment: &str,
    current_run: &str,
) -> Result<Passes, StateError> {
    let Some(run) = state
        .runs(50)
        .await?
        .into_iter()
        .find(|r| r.environment == environment && r.run_id != current_run)
    else {
        return Ok(Passes::new());
    };
    Ok(state
        .run_nodes(&run.run_id)
        .await?
        .into_iter()
        .filter(|n| n.kind == "test" && matches!(n.status.as_str(), "passed" | "cached"))
        .filter_map(|n| Some((n.node, (n.version?, run.run_id.clone()))))
        .collect())
}

#[allow(clippy::too_many_arguments)]
pub(crate) async fn run_tests(
    c: &Compilation,
    plan: &Plan,
    adapter: &dyn Adapter,
    states: &HashMap<&str, NodeState>,
    passed_before: &Passes,
    stopped: bool,
    cancel: &CancelHandle,
    recorder: &Recorder<'_>,
) -> Result<Vec<TestResult>, StateError> {
    let by_name: HashMap<&str, &CompiledTest> =
        c.tests.iter().map(|t| (t.name.as_str(), t)).collect();
    let physical = |t: &Target| crate::jobs::physical_parts(c, adapter, t);
    let mut out: Vec<TestResult> = Vec::new();
    // Results from `unrecorded` on are not written yet: those that ran nothing (cached,
    // blocked, cancelled) are written together with the next executed test's, or at the end,
    // rather than one state write each.
    let mut unrecorded = 0;
    for planned in &plan.tests {
        let test = by_name[planned.name.as_str()];
        let version = test_version(c, test);
        let mut r = TestResult {
            name: planned.name.clone(),
            status: "passed".into(),
            violations: None,
            duration_ms: None,
            error: None,
            version: version.clone(),
            reason: None,
        };
        let cached_from = passed_before
            .get(&planned.name)
            .filter(|(v, _)| version.as_ref() == Some(v))
            .map(|(_, run)| run);
        let blocked = planned.targets.iter().any(|t| {
            states
                .get(t.as_str())
                .is_some_and(|s| !s.satisfies_dependents())
        });
        if blocked {
            r.status = "blocked".into();
            r.error = Some(ErrorInfo::new(
                Category::Dependency,
                codes::UPSTREAM_FAILED,
                "a tested model did not materialise",
            ));
        } else if stopped || cancel.is_cancelled() {
            r.status = "cancelled".into();
            r.error = Some(ErrorInfo::new(
                Category::Cancelled,
                codes::CANCELLED,
                "not started: the run stopped",
            ));
        } else if let Some(run) = cached_from {
            r.status = "cached".into();
            r.reason = Some(format!(
                "passed in run {run} at this version: its SQL and what it reads are unchanged (`--rerun-tests` runs it)"
            ));
        } else {
            let t0 = Instant::now();
            let outcome = match c.executable_test_query(test, &physical) {
                Some(q) => adapter.execute(&q, &InFlight::default()).await,
                None => Err(phlo_transform_adapter::AdapterError::new(
                    codes::TEST_ERROR,
                    "test query could not be built",
                )),
            };
            r.duration_ms = Some(t0.elapsed().as_millis() as u64);
            match outcome {
                Ok(0) => r.violations = Some(0),
                Ok(n) => {
                    r.status = "failed".into();
                    r.violations = Some(n);
                    r.error = Some(
                        ErrorInfo::new(
                            Category::Test,
                            codes::TEST_FAILED,
                            format!("{n} violating row(s)"),
                        )
                        .at_attempt(1),
                    );
                }
                Err(e) => {
                    r.status = "error".into();
                    r.error = Some(
                        ErrorInfo::new(Category::Test, codes::TEST_ERROR, e.message).at_attempt(1),
                    );
                }
            }
        }
        let executed = r.duration_ms.is_some();
        out.push(r);
        if executed {
            recorder.tests(&out[unrecorded..]).await?;
            unrecorded = out.len();
        }
    }
    recorder.tests(&out[unrecorded..]).await?;
    Ok(out)
}
