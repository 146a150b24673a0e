//! The data tests, run after the models. A test over a model that did not materialise is
//! blocked; once the run has stopped (`--fail-fast`, an interrupt) the tests that were never
//! started are cancelled.

use crate::failure::Category;
use crate::recorder::Recorder;
use crate::report::{ErrorInfo, TestResult};
use crate::scheduler::NodeState;
use crate::CancelHandle;
use phlo_transform_adapter::{Adapter, InFlight};
use phlo_transform_compiler::resolve::Target;
use phlo_transform_compiler::{Compilation, CompiledTest};
use phlo_transform_core::diagnostic::codes;
use phlo_transform_plan::Plan;
use phlo_transform_state::StateError;
use std::collections::HashMap;
use std::time::Instant;

pub(crate) async fn run_tests(
    c: &Compilation,
    plan: &Plan,
    adapter: &dyn Adapter,
    states: &HashMap<&str, NodeState>,
    stopped: bool,
    cancel: &CancelHandle,
    recorder: &Recorder<'_>,
) -> Result<Vec<TestResult>, StateError> {
    let by_name: HashMap<&str, &CompiledTest> =
        c.tests.iter().map(|t| (t.name.as_str(), t)).collect();
    let physical = |t: &Target| crate::physical_parts(c, adapter, t);
    let mut out = Vec::new();
    for planned in &plan.tests {
        let test = by_name[planned.name.as_str()];
        let mut r = TestResult {
            name: planned.name.clone(),
            status: "passed".into(),
            violations: None,
            duration_ms: None,
            error: None,
        };
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
        } else {
            let t0 = Instant::now();
            let outcome = match c.executable_test_query(test, &physical) {
                Some(q) => adapter.execute(&q, &InFlight::default()).await,
                None => Err(phlo_transform_adapter::AdapterError {
                    code: codes::TEST_ERROR,
                    message: "test query could not be built".into(),
                    retryable: false,
                }),
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
        recorder.test(&r).await?;
        out.push(r);
    }
    Ok(out)
}
