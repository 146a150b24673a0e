//! The run's one structured event stream (SPEC §91). The scheduler emits every transition
//! once; the live progress display, `--events` JSON Lines, OpenLineage and the run artifact
//! are consumers of the same stream, so human and machine output cannot disagree.

use crate::{ErrorInfo, ModelResult, RunReport, TestResult};
use serde::Serialize;

/// One thing that happened in a run. Serialised with an `event` tag (`run_started`,
/// `model`, `retry`, `test`, `run_finished`): one JSON object per line on `--events`.
#[derive(Debug, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum RunEvent<'a> {
    RunStarted {
        run_id: &'a str,
        plan_id: &'a str,
        command: &'a str,
        at: &'a str,
        /// Models the plan lists (any decision) and tests it runs.
        models: usize,
        tests: usize,
        /// The run continues an interrupted run under its id (`run --resume`).
        resumed: bool,
        continued_from: Option<&'a str>,
    },
    /// A model changed state: `ready`, `running`, `passed`, `failed`, `skipped`, `cached`,
    /// `blocked`, `cancelled`. Terminal ones carry timings, rows and the failure.
    Model {
        run_id: &'a str,
        at: String,
        #[serde(flatten)]
        model: &'a ModelResult,
    },
    /// Attempt `failure.attempt` of `model` failed and will be tried again in `delay_ms`.
    Retry {
        run_id: &'a str,
        model: &'a str,
        delay_ms: u64,
        failure: &'a ErrorInfo,
    },
    /// A test finished (or was blocked or cancelled).
    Test {
        run_id: &'a str,
        at: String,
        #[serde(flatten)]
        test: &'a TestResult,
    },
    RunFinished {
        report: &'a RunReport,
    },
}

/// A consumer of run events. Called from the scheduler: it must return at once, so anything
/// slow (network, disk) belongs on its own task.
pub trait EventSink: Send + Sync {
    fn event(&self, event: &RunEvent<'_>);
}
