//! What a watch says as it goes: one event per step of a cycle, serialised with an `event`
//! tag (one JSON object per line on `watch --json`), rendered as text by the command line;
//! and the trait of who hears it. A leaf of the watch's modules.

use phlo_transform_core::Diagnostic;
use phlo_transform_events::{ModelResult, StatusCounts, TestResult};
use phlo_transform_project::Workspace;
use serde::Serialize;

use super::inputs::SourceChange;

/// Why a cycle started.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Trigger {
    /// The watch started.
    Start,
    /// A file of the workspace (or of a source outside it) changed.
    Files,
    /// A source's state changed (a REST catalog table, a warehouse relation) with no file.
    Sources,
}

/// One step of a watch.
#[derive(Debug, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum WatchEvent<'a> {
    /// The workspace was compiled; its diagnostics go with the event.
    Compiled {
        cycle: u64,
        trigger: Trigger,
        /// The sources whose state differs from the last cycle's (at the start: none).
        sources_changed: &'a [SourceChange],
        models: usize,
        errors: usize,
        warnings: usize,
    },
    /// Compile errors reach every selected model: nothing runs until they are fixed.
    Blocked { cycle: u64 },
    /// The cycle stopped on the diagnostics that go with the event (the workspace's
    /// configuration cannot be read, the state or the engine cannot be opened); the watch
    /// goes on.
    Failed { cycle: u64 },
    /// The run's plan: the models it builds, those compile errors block, and how many
    /// selected models are current.
    Planned {
        cycle: u64,
        plan_id: &'a str,
        build: Vec<&'a str>,
        blocked: Vec<&'a str>,
        current: usize,
    },
    /// A model ended in the run: passed (built), failed, blocked or cancelled.
    Model {
        cycle: u64,
        run_id: &'a str,
        #[serde(flatten)]
        model: &'a ModelResult,
    },
    /// The run's tests, once they ran.
    Tests {
        cycle: u64,
        run_id: &'a str,
        passed: usize,
        failed: usize,
        results: &'a [TestResult],
    },
    /// The run ended: passed, failed or cancelled.
    RunFinished {
        cycle: u64,
        run_id: &'a str,
        status: &'a str,
        counts: &'a StatusCounts,
    },
    /// Diagnostics met after the run (its artifacts could not be written); the run stands.
    Diagnostics { cycle: u64 },
    /// Waiting for the next change.
    Idle {
        cycle: u64,
        files_ms: u64,
        /// `None`: every source is in files the file poll covers.
        sources_ms: Option<u64>,
    },
}

/// What a front end (the command line) does with a watch's events.
pub trait WatchFrontEnd: Sync {
    /// `event` happened, with the diagnostics that go with it (a compile's, the reasons a
    /// cycle stopped, what opening the engine met) and the workspace their snippets come from.
    /// Called from the run's scheduler too: it must return at once.
    fn event(&self, event: &WatchEvent<'_>, diagnostics: &[Diagnostic], ws: Option<&Workspace>);
}
