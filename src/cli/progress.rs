//! Consumers of a run's event stream in the command line: the live progress display on
//! stderr (a bar on a terminal, plain lines otherwise) and `--events` JSON Lines on stdout.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use phlo_transform_exec::{EventSink, ModelResult, RunEvent};
use std::collections::BTreeSet;
use std::io::IsTerminal;
use std::sync::Mutex;

/// The human view of a run: each model's end (and each retry) as a line on stderr, under a
/// live bar of finished/total and what is running when stderr is a terminal and NO_COLOR is
/// unset.
pub struct Progress {
    bar: Option<ProgressBar>,
    state: Mutex<Counts>,
    total: usize,
}

#[derive(Default)]
struct Counts {
    done: usize,
    running: BTreeSet<String>,
}

impl Progress {
    /// A display for a run that ends `total` models (`phlo_transform_exec::models_ending`).
    pub fn new(total: usize) -> Self {
        let live = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
        let bar = live.then(|| {
            let bar = ProgressBar::with_draw_target(
                Some(total as u64),
                ProgressDrawTarget::stderr_with_hz(10),
            );
            bar.set_style(
                ProgressStyle::with_template(
                    "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} {wide_msg}",
                )
                .expect("a valid template"),
            );
            bar.enable_steady_tick(std::time::Duration::from_millis(120));
            bar
        });
        Progress {
            bar,
            state: Mutex::new(Counts::default()),
            total,
        }
    }

    fn line(&self, text: String) {
        match &self.bar {
            Some(bar) => bar.println(text),
            None => eprintln!("{text}"),
        }
    }

    fn model(&self, m: &ModelResult) {
        let mut counts = self.state.lock().expect("not poisoned");
        match m.status.as_str() {
            "running" => {
                counts.running.insert(m.name.clone());
            }
            "passed" | "failed" | "blocked" | "cancelled" => {
                // Blocked and cancelled models may never have been running.
                counts.running.remove(&m.name);
                counts.done += 1;
                let detail = detail(m);
                self.line(format!(
                    "[{}/{}] {:<9} {}{detail}",
                    counts.done,
                    self.total,
                    m.status.to_uppercase(),
                    m.name
                ));
            }
            _ => return,
        }
        if let Some(bar) = &self.bar {
            bar.set_position(counts.done as u64);
            let running: Vec<&str> = counts.running.iter().map(String::as_str).collect();
            bar.set_message(running.join(", "));
        }
    }
}

/// `  (12 ms, 340 rows)`, `  A001: …`.
fn detail(m: &ModelResult) -> String {
    if let Some(e) = &m.error {
        return format!("  {}: {}", e.code, e.message);
    }
    match (m.duration_ms, m.rows) {
        (Some(ms), Some(rows)) => format!("  ({ms} ms, {rows} rows)"),
        (Some(ms), None) => format!("  ({ms} ms)"),
        _ => String::new(),
    }
}

impl EventSink for Progress {
    fn event(&self, event: &RunEvent<'_>) {
        match event {
            RunEvent::Model { model, .. } => self.model(model),
            RunEvent::Retry {
                model,
                delay_ms,
                failure,
                ..
            } => self.line(format!(
                "          {model}: attempt {} failed ({}: {}), retrying in {delay_ms} ms",
                failure.attempt, failure.code, failure.message
            )),
            RunEvent::RunFinished { .. } => {
                if let Some(bar) = &self.bar {
                    bar.finish_and_clear();
                }
            }
            RunEvent::RunStarted { .. } | RunEvent::Test { .. } => {}
        }
    }
}

/// `--events`: every event as one JSON object per line on stdout, flushed as it happens.
pub struct JsonLines;

impl EventSink for JsonLines {
    fn event(&self, event: &RunEvent<'_>) {
        let line = serde_json::to_string(event).expect("events serialise");
        // Scrubbed and never panicking, like every other line (`crate::emit`).
        println!("{line}");
    }
}
