//! `phlo-transform watch` (issue 40): the workspace kept built while it is edited and while its
//! sources change.
//!
//! A cycle compiles the workspace (the on-disk compile cache makes it incremental), says its
//! diagnostics, and unless compile errors reach every selected model, executes a `run` of the
//! selection through [`crate::command::execute_plan`]: the plan `run` makes, so a model is
//! rebuilt only when its version differs from the recorded one (its SQL, its inputs'
//! versions, the states of the sources it reads: `source_change`), then the tests of what was
//! built. Between cycles the files are polled every `files` interval
//! ([`phlo_transform_project::fingerprint`]: the workspace, and sources in files outside it);
//! when a source changes where no file shows it (an Iceberg REST catalog table, a warehouse
//! relation), the sources are read again every `sources` interval.
//!
//! A cycle that fails (a model, a test, the engine, the state) does not end the watch: the
//! next change starts the next cycle. Changes that arrive during a cycle start one next cycle.
//! [`WatchRequest::stop`] ends it: between cycles at once, during a run as Ctrl-C ends `run`
//! (in-flight models cancelled and recorded so, the run `cancelled`).

mod cycle;
mod event;
mod inputs;

pub use event::{Trigger, WatchEvent, WatchFrontEnd};
pub use inputs::{watched, SourceChange};

use phlo_transform_adapter::SchemaRead;
use phlo_transform_compiler::{ArtifactDir, Compilation};
use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;
use phlo_transform_plan::{CompileErrorBlocking, SelectorSpec};
use phlo_transform_project::fingerprint::{Fingerprint, Watched};
use std::ops::RangeInclusive;
use std::sync::Arc;
use std::time::Duration;

use crate::command::{execute_plan, ExecutionOptions, PlanCommand, PlanRequest};
use crate::target::CommandTarget;
use crate::{CancelHandle, RunReport};
use cycle::CycleFront;
use inputs::Identities;

/// How often a watch looks for changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Intervals {
    /// The files' poll.
    pub files: Duration,
    /// Reading the sources no file shows again (never more often than the files' poll).
    pub sources: Duration,
}

impl Intervals {
    pub const DEFAULT_FILES_MS: u64 = 500;
    pub const DEFAULT_SOURCES_MS: u64 = 5_000;
    /// Bounds of either interval: often enough to follow an edit, rarely enough that a poll
    /// (a directory walk, a catalog request) never keeps a core busy, and at most a minute so
    /// a watch never looks deaf.
    pub const BOUNDS_MS: RangeInclusive<u64> = 50..=60_000;

    /// `files_ms` and `sources_ms` in milliseconds; C007 outside [`Intervals::BOUNDS_MS`].
    pub fn from_ms(files_ms: u64, sources_ms: u64) -> Result<Intervals, Diagnostic> {
        for (what, ms) in [("--poll-ms", files_ms), ("--source-poll-ms", sources_ms)] {
            if !Self::BOUNDS_MS.contains(&ms) {
                let (low, high) = (Self::BOUNDS_MS.start(), Self::BOUNDS_MS.end());
                return Err(Diagnostic::error(
                    codes::INVALID_OPTION,
                    format!("{what} {ms}: a watch polls every {low} to {high} ms"),
                )
                .with_help(format!("pass {what} between {low} and {high}")));
            }
        }
        Ok(Intervals {
            files: Duration::from_millis(files_ms),
            sources: Duration::from_millis(sources_ms.max(files_ms)),
        })
    }
}

/// One watch.
pub struct WatchRequest<'a> {
    pub target: CommandTarget<'a>,
    pub spec: &'a SelectorSpec,
    /// How each cycle's run executes (`-j`, retries, …; the continuation is always fresh).
    pub options: ExecutionOptions,
    pub intervals: Intervals,
    /// Ends the watch (the command line: the first Ctrl-C or SIGTERM).
    pub stop: CancelHandle,
}

/// How a watch ended.
#[derive(Debug)]
pub enum Stopped {
    /// Between cycles.
    Idle,
    /// During a cycle's run, which ended as its report says (`cancelled`, unless it had
    /// just finished).
    DuringRun(Box<RunReport>),
}

/// Watches until [`WatchRequest::stop`]. `Err` only when the first compile cannot start (the
/// workspace or its configuration cannot be read), as `run` fails; later such failures are
/// [`WatchEvent::Failed`] and the watch goes on.
pub async fn watch(
    request: WatchRequest<'_>,
    front: &dyn WatchFrontEnd,
) -> Result<Stopped, Diagnostic> {
    let t = &request.target;
    let mut watched = inputs::before_compile(t);
    let mut seen = watched.fingerprint();
    let mut c = Arc::new(compile(t)?);
    let mut next: Result<(), Diagnostic> = Ok(());
    let mut trigger = Trigger::Start;
    let mut previous: Option<Identities> = None;
    let mut cycle = 0;
    loop {
        cycle += 1;
        match next {
            Err(d) => front.event(&WatchEvent::Failed { cycle }, &[d], None),
            Ok(()) => {
                let following = watched_for(&request, &c);
                if following != watched {
                    // Another set of sources outside the root: a new baseline.
                    watched = following;
                    seen = watched.fingerprint();
                }
                let ids = inputs::identities(&c);
                let changed = previous
                    .as_ref()
                    .map(|was| inputs::changes(was, &ids))
                    .unwrap_or_default();
                previous = Some(ids);
                compiled(front, &c, cycle, trigger, &changed);
                if let Some(report) = build(&request, &c, cycle, front).await {
                    if request.stop.is_cancelled() {
                        return Ok(Stopped::DuringRun(Box::new(report)));
                    }
                }
            }
        }
        if request.stop.is_cancelled() {
            return Ok(Stopped::Idle);
        }
        let polls_sources = inputs::needs_source_polls(&c);
        let idle = WatchEvent::Idle {
            cycle,
            files_ms: millis(request.intervals.files),
            sources_ms: polls_sources.then(|| millis(request.intervals.sources)),
        };
        front.event(&idle, &[], None);
        let poll = Poll {
            request: &request,
            watched: &watched,
            polls_sources,
            last: previous.as_ref(),
        };
        let Some((why, compiled)) = poll.next_change(&mut seen).await else {
            return Ok(Stopped::Idle);
        };
        trigger = why;
        next = compiled.map(|fresh| c = Arc::new(fresh));
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The workspace compiled for the target, as `run` compiles it.
fn compile(t: &CommandTarget<'_>) -> Result<Compilation, Diagnostic> {
    crate::compile_for_target(t.root, t.adapter, SchemaRead::Refresh, Some(t.state))
}

fn watched_for(request: &WatchRequest<'_>, c: &Compilation) -> Watched {
    let t = &request.target;
    watched(c, t.warehouse, t.artifacts)
}

fn compiled(
    front: &dyn WatchFrontEnd,
    c: &Compilation,
    cycle: u64,
    trigger: Trigger,
    changed: &[SourceChange],
) {
    let diagnostics: Vec<Diagnostic> = c.diagnostics.iter().cloned().collect();
    let errors = diagnostics.iter().filter(|d| d.is_error()).count();
    let event = WatchEvent::Compiled {
        cycle,
        trigger,
        sources_changed: changed,
        models: c.models.len(),
        errors,
        warnings: diagnostics.len() - errors,
    };
    front.event(&event, &diagnostics, Some(&c.workspace));
}

/// The cycle's run, as `run` makes it (compile errors block what they reach; nothing left to
/// run is [`WatchEvent::Blocked`]); `None` when it did not run.
async fn build(
    request: &WatchRequest<'_>,
    c: &Arc<Compilation>,
    cycle: u64,
    front: &dyn WatchFrontEnd,
) -> Option<RunReport> {
    let t = request.target;
    let failed = |diagnostics: &[Diagnostic]| {
        front.event(
            &WatchEvent::Failed { cycle },
            diagnostics,
            Some(&c.workspace),
        );
    };
    match crate::planning::compile_error_blocking(c, &t, request.spec).await {
        Ok(CompileErrorBlocking::All) => {
            front.event(&WatchEvent::Blocked { cycle }, &[], None);
            return None;
        }
        Ok(_) => {}
        Err(diagnostics) => {
            failed(&diagnostics);
            return None;
        }
    }
    let store = match t.open_state().await {
        Ok(store) => store,
        Err(d) => {
            failed(&[d]);
            return None;
        }
    };
    let artifacts = ArtifactDir::new(t.artifacts);
    let cycle_front = CycleFront {
        c: c.clone(),
        cycle,
        front,
        stop: &request.stop,
        warehouse: t.warehouse,
        artifacts: t.artifacts,
        warnings: Default::default(),
    };
    let plan = PlanRequest {
        compilation: c,
        target: t,
        store,
        artifacts: &artifacts,
        command: PlanCommand::Run {
            full_refresh: false,
        },
        spec: request.spec,
        options: request.options.clone(),
    };
    match execute_plan(plan, &cycle_front).await {
        Ok(executed) => {
            if let Some(d) = executed.artifacts {
                front.event(&WatchEvent::Diagnostics { cycle }, &[d], None);
            }
            Some(executed.report)
        }
        Err(diagnostics) => {
            failed(&diagnostics);
            None
        }
    }
}

/// Waiting for the next change after a cycle.
struct Poll<'a> {
    request: &'a WatchRequest<'a>,
    watched: &'a Watched,
    /// Whether a source needs reading again to show a change.
    polls_sources: bool,
    /// The sources' identities the last cycle compiled with.
    last: Option<&'a Identities>,
}

impl Poll<'_> {
    /// The next change and the workspace compiled after it (`Err`: it cannot be compiled);
    /// `None` once the watch is stopped. `seen` is the files' fingerprint the last cycle
    /// started from, so a change made during that cycle starts the next one.
    async fn next_change(
        &self,
        seen: &mut Fingerprint,
    ) -> Option<(Trigger, Result<Compilation, Diagnostic>)> {
        let intervals = self.request.intervals;
        let t = &self.request.target;
        let mut since_sources = Duration::ZERO;
        loop {
            tokio::select! {
                _ = tokio::time::sleep(intervals.files) => {}
                _ = self.request.stop.cancelled() => return None,
            }
            let now = self.watched.fingerprint();
            if now != *seen {
                *seen = now;
                return Some((Trigger::Files, compile(t)));
            }
            since_sources += intervals.files;
            if self.polls_sources && since_sources >= intervals.sources {
                since_sources = Duration::ZERO;
                // A workspace that cannot be compiled now shows when its files change.
                if let Ok(fresh) = compile(t) {
                    if self.last != Some(&inputs::identities(&fresh)) {
                        return Some((Trigger::Sources, Ok(fresh)));
                    }
                }
            }
        }
    }
}
