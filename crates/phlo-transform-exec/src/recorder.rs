//! Writes each transition to the state store, then tells the event stream. The write comes
//! first so that anything an event consumer reads back from the state is already there, and a
//! write failure ends the run before the transition is announced (SPEC §65a).

use crate::failure::now;
use phlo_transform_events::{ErrorInfo, ModelResult, TestResult};
use phlo_transform_events::{EventSink, RunEvent};
use phlo_transform_state::{AttemptRecord, NodeRecord, QueryRecord, StateError, StateStore};

pub(crate) struct Recorder<'a> {
    pub run_id: String,
    pub state: &'a dyn StateStore,
    pub events: &'a [&'a dyn EventSink],
}

/// The record of a query an attempt finished.
pub(crate) fn query_record(q: phlo_transform_adapter::QueryStatistics) -> QueryRecord {
    QueryRecord {
        query_id: q.id.0,
        rows: q.rows,
        bytes: q.bytes,
        cpu_ms: q.cpu_ms,
        wall_ms: q.wall_ms,
        written_rows: q.written_rows,
    }
}

/// One ended attempt of a model, as `Recorder::attempt` writes it.
pub(crate) struct EndedAttempt<'a> {
    pub attempt: u32,
    pub status: &'a str,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    pub duration_ms: Option<u64>,
    pub failure: Option<&'a ErrorInfo>,
    /// The warehouse queries the attempt finished.
    pub queries: Vec<QueryRecord>,
}

impl Recorder<'_> {
    pub fn emit(&self, event: &RunEvent<'_>) {
        for sink in self.events {
            sink.event(event);
        }
    }

    /// Records a model's current state (its node record), then emits it.
    pub async fn model(&self, r: &ModelResult) -> Result<(), StateError> {
        self.models(std::slice::from_ref(r)).await
    }

    /// Records the states of several models in one state write, then emits them in order.
    pub async fn models(&self, rs: &[ModelResult]) -> Result<(), StateError> {
        let records: Vec<NodeRecord> = rs
            .iter()
            .map(|r| node_record("model", r, i64::from(r.attempts)))
            .collect();
        self.state.record_nodes(&self.run_id, &records).await?;
        for r in rs {
            self.emit(&RunEvent::Model {
                run_id: &self.run_id,
                at: now(),
                model: r,
            });
        }
        Ok(())
    }

    /// Emits a transition that is not written (`ready` with a free slot: it starts at once).
    pub fn announce(&self, r: &ModelResult) {
        self.emit(&RunEvent::Model {
            run_id: &self.run_id,
            at: now(),
            model: r,
        });
    }

    /// Records the results of several tests in one state write, then emits them in order.
    pub async fn tests(&self, ts: &[TestResult]) -> Result<(), StateError> {
        let records: Vec<NodeRecord> = ts.iter().map(test_record).collect();
        self.state.record_nodes(&self.run_id, &records).await?;
        for t in ts {
            self.emit(&RunEvent::Test {
                run_id: &self.run_id,
                at: now(),
                test: t,
            });
        }
        Ok(())
    }

    pub async fn attempt(&self, model: &str, a: EndedAttempt<'_>) -> Result<(), StateError> {
        self.state
            .record_attempt(
                &self.run_id,
                &AttemptRecord {
                    node: model.to_string(),
                    kind: "model".into(),
                    attempt: i64::from(a.attempt),
                    status: a.status.to_string(),
                    started_at: a.started_at,
                    finished_at: a.finished_at,
                    duration_ms: a.duration_ms.map(|d| d as i64),
                    error_category: a.failure.map(|f| f.category.as_str().to_string()),
                    error_code: a.failure.map(|f| f.code.clone()),
                    error_message: a.failure.map(|f| f.message.clone()),
                    retryable: a.failure.is_some_and(|f| f.retryable),
                    queries: a.queries,
                },
            )
            .await
    }
}

/// A test's node record: a test is recorded as a node of kind `test`, its violations as rows.
fn test_record(t: &TestResult) -> NodeRecord {
    let as_model = ModelResult {
        status: t.status.clone(),
        rows: t.violations,
        duration_ms: t.duration_ms,
        error: t.error.clone(),
        ..ModelResult::new(&t.name, t.version.clone())
    };
    let attempt = i64::from(t.error.as_ref().map_or(1, |e| e.attempt.max(1)));
    node_record("test", &as_model, attempt)
}

fn node_record(kind: &str, r: &ModelResult, attempt: i64) -> NodeRecord {
    NodeRecord {
        node: r.name.clone(),
        kind: kind.to_string(),
        status: r.status.clone(),
        attempt,
        version: r.version.clone(),
        started_at: r.started_at.clone(),
        finished_at: r.finished_at.clone(),
        duration_ms: r.duration_ms.map(|d| d as i64),
        rows: r.rows.map(|n| n as i64),
        error_code: r.error.as_ref().map(|e| e.code.clone()),
        error_message: r.error.as_ref().map(|e| e.message.clone()),
    }
}
