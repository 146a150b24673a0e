//! What a run says as it goes and when it ends (SPEC §65, §75, §91): the one event stream the
//! scheduler emits, the [`EventSink`] trait its consumers implement (the progress display,
//! `--events`, OpenLineage), and the [`RunReport`] that `run --json` prints and `run.json`
//! stores. Below the executor, so the emitters it feeds sit below it too.

mod events;
mod failure;
mod report;

pub use events::{EventSink, RunEvent};
pub use failure::{Category, ErrorInfo};
pub use report::{AttemptQuery, ModelResult, RunReport, StatusCounts, TestResult};
