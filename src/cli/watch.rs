//! `watch`: the library's loop (`phlo_transform_exec::watch`) with the command line as its
//! front end: each event a line of text (diagnostics rendered on stderr), or with `--json`
//! one envelope per line (NDJSON, the event's `event` tag and fields, then `diagnostics`);
//! the first Ctrl-C or SIGTERM stops it.

use phlo_transform_core::Diagnostic;
use phlo_transform_exec::watch::{
    Intervals, Stopped, Trigger, WatchEvent, WatchFrontEnd, WatchRequest,
};
use phlo_transform_exec::CancelHandle;
use phlo_transform_plan::SelectorSpec;
use phlo_transform_project::Workspace;

use super::execute::{interrupt, BuildArgs};
use super::render::{self, Output, Report};
use super::{Paths, EXIT_FAILURES, EXIT_OK};

/// Watches until stopped: 0 when stopped between cycles, else the code `run` gives the run
/// the stop interrupted (1: cancelled).
pub async fn watch(
    paths: &Paths,
    build: &BuildArgs,
    spec: &SelectorSpec,
    (poll_ms, source_poll_ms): (u64, u64),
    json: bool,
) -> u8 {
    let intervals = match Intervals::from_ms(poll_ms, source_poll_ms) {
        Ok(intervals) => intervals,
        Err(d) => return render::fatal(d, json),
    };
    let stop = CancelHandle::default();
    let on_interrupt = tokio::spawn(interrupt(stop.clone(), "watch"));
    let request = WatchRequest {
        target: paths.target(),
        spec,
        options: build.options(phlo_transform_exec::Continuation::Fresh),
        intervals,
        stop,
    };
    let watched = phlo_transform_exec::watch::watch(request, &Lines { json }).await;
    on_interrupt.abort();
    match watched {
        Ok(Stopped::Idle) => EXIT_OK,
        Ok(Stopped::DuringRun(report)) if report.failed() => EXIT_FAILURES,
        Ok(Stopped::DuringRun(_)) => EXIT_OK,
        Err(d) => render::fatal(d, json),
    }
}

/// The command line as the watch's front end.
struct Lines {
    json: bool,
}

impl WatchFrontEnd for Lines {
    fn event(&self, event: &WatchEvent<'_>, diagnostics: &[Diagnostic], ws: Option<&Workspace>) {
        let mut out = Output::new(self.json);
        if let Some(ws) = ws {
            out = out.with_workspace(ws);
        }
        out.diagnostics(diagnostics.iter().cloned());
        out.report(&Event(event));
    }
}

/// One event as a report: its fields in the envelope, a line of text.
#[derive(serde::Serialize)]
#[serde(transparent)]
struct Event<'e, 'a>(&'e WatchEvent<'a>);

impl Report for Event<'_, '_> {
    fn human(&self) -> String {
        match self.0 {
            WatchEvent::Compiled {
                cycle,
                trigger,
                sources_changed,
                models,
                errors,
                warnings,
            } => {
                let why = match trigger {
                    Trigger::Start => "started",
                    Trigger::Files => "files changed",
                    Trigger::Sources => "sources changed",
                };
                let mut text = format!(
                    "[{cycle}] {why}: compiled {models} model(s), {}, {}\n",
                    plural(*errors, "error"),
                    plural(*warnings, "warning")
                );
                for s in sources_changed.iter() {
                    let state = |s: &Option<String>| s.clone().unwrap_or_else(|| "none".into());
                    text.push_str(&format!(
                        "[{cycle}]   source {} changed: {} → {}\n",
                        s.name,
                        state(&s.was),
                        state(&s.now)
                    ));
                }
                text
            }
            WatchEvent::Blocked { cycle } => {
                format!("[{cycle}] compile errors block every selected model: fix them to build\n")
            }
            WatchEvent::Failed { cycle } => {
                format!("[{cycle}] the cycle stopped (see above); watching on\n")
            }
            WatchEvent::Planned {
                cycle,
                build,
                blocked,
                current,
                ..
            } => {
                let mut text = match build.is_empty() {
                    true => format!("[{cycle}] nothing to build ({current} current)\n"),
                    false => format!(
                        "[{cycle}] building {} ({current} current): {}\n",
                        plural(build.len(), "model"),
                        build.join(", ")
                    ),
                };
                if !blocked.is_empty() {
                    text.push_str(&format!(
                        "[{cycle}]   blocked by compile errors: {}\n",
                        blocked.join(", ")
                    ));
                }
                text
            }
            WatchEvent::Model { cycle, model, .. } => {
                let status = match model.status.as_str() {
                    "passed" => "built".to_string(),
                    other => other.to_uppercase(),
                };
                let detail = match (&model.error, model.duration_ms, model.rows) {
                    (Some(e), _, _) => format!("  {}: {}", e.code, e.message),
                    (None, Some(ms), Some(rows)) => format!(" ({ms} ms, {rows} rows)"),
                    (None, Some(ms), None) => format!(" ({ms} ms)"),
                    _ => String::new(),
                };
                format!("[{cycle}]   {status} {}{detail}\n", model.name)
            }
            WatchEvent::Tests {
                cycle,
                passed,
                failed,
                results,
                ..
            } => {
                let mut text = format!("[{cycle}] tests: {passed} passed, {failed} failed\n");
                for t in results
                    .iter()
                    .filter(|t| matches!(t.status.as_str(), "failed" | "error"))
                {
                    text.push_str(&format!(
                        "[{cycle}]   {} {}\n",
                        t.status.to_uppercase(),
                        t.name
                    ));
                }
                text
            }
            WatchEvent::RunFinished {
                cycle,
                run_id,
                status,
                ..
            } => format!("[{cycle}] run {run_id} {status}\n"),
            WatchEvent::Diagnostics { .. } => String::new(),
            WatchEvent::Idle {
                cycle,
                files_ms,
                sources_ms,
            } => {
                let sources = sources_ms
                    .map(|ms| format!(", sources every {ms} ms"))
                    .unwrap_or_default();
                format!("[{cycle}] watching for changes (files every {files_ms} ms{sources}; Ctrl-C stops)\n")
            }
        }
    }
}

/// `1 error`, `2 errors`.
fn plural(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}
