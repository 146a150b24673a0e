//! Run events: the phlo run is the parent job (`phlo-transform.<command>`), each executed model
//! a child job with its own START and COMPLETE or FAIL, carrying the model's real start and
//! end times. Run ids are derived from phlo's run id, so the same run gives the same UUIDs
//! from any process.

use crate::config::OpenLineageConfig;
use crate::design::{job, model_io, RecordedModel};
use crate::events::{self, envelope};
use crate::transport::Emitter;
use phlo_transform_compiler::Compilation;
use phlo_transform_events::{EventSink, ModelResult, RunEvent, RunReport};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::collections::HashSet;
use std::path::Path;
use std::sync::Mutex;

/// The OpenLineage run id of phlo run `run_id`: the id itself when it is a UUID (phlo's are
/// v7), otherwise one derived from it.
pub fn parent_run_uuid(run_id: &str) -> String {
    match uuid::Uuid::try_parse(run_id) {
        Ok(u) => u.hyphenated().to_string(),
        Err(_) => derived_uuid(&[run_id]),
    }
}

/// The OpenLineage run id of model `model_id` (its stable `@id`) in phlo run `run_id`.
pub fn model_run_uuid(run_id: &str, model_id: &str) -> String {
    derived_uuid(&[run_id, model_id])
}

/// A UUID in v4 format whose bits are a SHA-256 of `parts`: deterministic, and as unlikely to
/// collide as a random one.
fn derived_uuid(parts: &[&str]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p.as_bytes());
        h.update([0]);
    }
    let digest = h.finalize();
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    uuid::Builder::from_random_bytes(bytes)
        .into_uuid()
        .hyphenated()
        .to_string()
}

/// Turns a run's transitions into events handed to an [`Emitter`]. Never blocks: building an
/// event is a few JSON objects, sending it is the emitter's background work.
pub struct RunEmitter<'a> {
    c: &'a Compilation,
    config: &'a OpenLineageConfig,
    emitter: &'a Emitter,
    /// `phlo-transform.run`, `phlo-transform.apply`.
    parent_job: String,
    /// Models whose START was sent.
    started: Mutex<HashSet<String>>,
}

impl<'a> RunEmitter<'a> {
    pub fn new(
        c: &'a Compilation,
        config: &'a OpenLineageConfig,
        emitter: &'a Emitter,
        command: &str,
    ) -> Self {
        RunEmitter {
            c,
            config,
            emitter,
            parent_job: format!("phlo-transform.{command}"),
            started: Mutex::new(HashSet::new()),
        }
    }

    fn parent_event(&self, kind: &str, run_id: &str, time: &str) -> Value {
        let mut e = envelope("RunEvent", time);
        e.insert("eventType".into(), json!(kind));
        e.insert("run".into(), json!({ "runId": parent_run_uuid(run_id) }));
        e.insert(
            "job".into(),
            json!({
                "namespace": self.config.namespace,
                "name": self.parent_job,
                "facets": { "jobType": events::facet("JobTypeJobFacet", "2-0-4", json!({
                    "processingType": "BATCH", "integration": events::INTEGRATION, "jobType": "RUN",
                })) },
            }),
        );
        Value::Object(e)
    }

    /// A model's event of `kind` (START, COMPLETE, FAIL) at `time`.
    fn model_event(&self, kind: &str, run_id: &str, r: &ModelResult, time: &str) -> Option<Value> {
        let i = self.c.model_index(&r.name)?;
        let m = &self.c.models[i];
        let mut run_facets = serde_json::Map::new();
        run_facets.insert(
            "parent".into(),
            events::parent(
                &self.config.namespace,
                &self.parent_job,
                &parent_run_uuid(run_id),
            ),
        );
        if let (Some(error), "FAIL") = (&r.error, kind) {
            run_facets.insert("errorMessage".into(), events::error_message(&error.message));
        }
        let (inputs, mut output) = model_io(self.c, self.config, i);
        if let (Some(rows), "COMPLETE") = (r.rows, kind) {
            output["outputFacets"] = json!({ "outputStatistics": events::output_statistics(rows) });
        }
        if kind == "COMPLETE" {
            let at = r
                .current_as_of
                .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true));
            output["facets"][events::FRESHNESS_FACET] = events::freshness(at.as_deref());
        }
        let mut e = envelope("RunEvent", time);
        e.insert("eventType".into(), json!(kind));
        e.insert(
            "run".into(),
            json!({ "runId": model_run_uuid(run_id, &m.id), "facets": run_facets }),
        );
        e.insert("job".into(), job(self.c, self.config, i));
        e.insert("inputs".into(), Value::Array(inputs));
        e.insert("outputs".into(), json!([output]));
        Some(Value::Object(e))
    }
}

/// One consumer of the run's event stream: the run's START, each model's START and COMPLETE
/// or FAIL (ABORT when it was cancelled in flight), the run's COMPLETE, FAIL or ABORT.
impl EventSink for RunEmitter<'_> {
    fn event(&self, event: &RunEvent<'_>) {
        match event {
            RunEvent::RunStarted { run_id, at, .. } => self.run_started(run_id, at),
            RunEvent::Model { run_id, model, .. } => self.model(run_id, model),
            RunEvent::RunFinished { report } => self.run_finished(report),
            RunEvent::Retry { .. } | RunEvent::Test { .. } => {}
        }
    }
}

impl RunEmitter<'_> {
    fn run_started(&self, run_id: &str, started_at: &str) {
        self.emitter
            .emit(&self.parent_event("START", run_id, started_at));
    }

    fn model(&self, run_id: &str, r: &ModelResult) {
        let first = || {
            self.started
                .lock()
                .expect("not poisoned")
                .insert(r.name.clone())
        };
        let terminal = match r.status.as_str() {
            "running" => None,
            "passed" => Some("COMPLETE"),
            "failed" => Some("FAIL"),
            // Only a model that started has a run to abort.
            "cancelled" if r.started_at.is_some() => Some("ABORT"),
            // Pending, ready, skipped, cached, blocked and never-started models do not run:
            // no run of theirs to tell.
            _ => return,
        };
        let start = r.started_at.clone().unwrap_or_else(events::now);
        // A model that failed before it started (no executable SQL) still gets its START.
        if first() {
            if let Some(e) = self.model_event("START", run_id, r, &start) {
                self.emitter.emit(&e);
            }
        }
        if let Some(kind) = terminal {
            let end = r.finished_at.clone().unwrap_or_else(events::now);
            if let Some(e) = self.model_event(kind, run_id, r, &end) {
                self.emitter.emit(&e);
            }
        }
    }

    fn run_finished(&self, report: &RunReport) {
        let kind = match report.status.as_str() {
            "passed" => "COMPLETE",
            "cancelled" => "ABORT",
            _ => "FAIL",
        };
        let mut e = self.parent_event(kind, &report.run_id, &report.finished_at);
        if kind == "FAIL" {
            let models = report.counts.failed + report.counts.blocked;
            let tests = report.tests.iter().filter(|t| !t.ok()).count();
            e["run"]["facets"] = json!({
                "errorMessage": events::error_message(&format!(
                    "run {} failed: {models} model(s) failed or blocked, {tests} test(s) did not pass",
                    report.run_id
                )),
            });
        }
        self.emitter.emit(&e);
    }
}

/// OpenLineage around one run: the transports started before it, with the renames found
/// against the recorded state sent first; the run's events go through a [`RunEmitter`] and
/// the queues are drained (`emitter.finish()`) once the report exists.
pub struct RunLineage {
    pub config: OpenLineageConfig,
    pub emitter: Emitter,
}

impl RunLineage {
    /// `None` when no transport is configured.
    pub fn start(c: &Compilation, warehouse: &Path) -> Option<Self> {
        let config = OpenLineageConfig::from_env(&c.workspace, warehouse);
        let emitter = Emitter::start(&config)?;
        Some(RunLineage { config, emitter })
    }

    /// Sends the renames first: a model whose `@id` the main environment's records
    /// (`recorded`) know under another name.
    pub fn announce_renames(&self, c: &Compilation, recorded: &[RecordedModel]) {
        for event in crate::design::rename_events(c, &self.config, recorded) {
            self.emitter.emit(&event);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_uuids_are_stable_and_distinct_per_model() {
        let run = "0190f0c2a1b27c3d8e4f5a6b7c8d9e0f";
        assert_eq!(parent_run_uuid(run), "0190f0c2-a1b2-7c3d-8e4f-5a6b7c8d9e0f");
        let a = model_run_uuid(run, "x.a");
        assert_eq!(a, model_run_uuid(run, "x.a"));
        assert_ne!(a, model_run_uuid(run, "x.b"));
        assert_ne!(a, model_run_uuid("another", "x.a"));
        let parsed = uuid::Uuid::parse_str(&a).unwrap();
        assert_eq!(parsed.get_version_num(), 4);
    }
}
