//! [`Operations`]: every operation of the daemon, the rules a submission meets (one at a
//! time, idempotency keys), cancellation, and the transitions journaled.

use super::journal::Journal;
use super::operation::{now, Operation, Progress, Status, Submission};
use crate::api_error::{ApiError, ErrorBody};
use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;
use phlo_transform_exec::CancelHandle;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::mpsc::Sender;
use std::sync::Mutex;

/// Every operation of this workspace's daemon, the journal they are kept in, and the queue
/// to the [`Worker`].
pub struct Operations {
    journal: Journal,
    inner: Mutex<Registry>,
    queue: Mutex<Sender<String>>,
}

#[derive(Default)]
struct Registry {
    /// By id; ids are UUIDv7, so in submission order.
    operations: BTreeMap<String, Operation>,
    /// The run's handle while one executes.
    cancels: HashMap<String, CancelHandle>,
}

impl Operations {
    /// The operations the journal at `path` holds (interrupted ones marked failed); new
    /// submissions go to `queue`.
    pub fn open(path: &Path, queue: Sender<String>) -> Result<Operations, Diagnostic> {
        let (journal, operations) = Journal::open(path)?;
        Ok(Operations {
            journal,
            inner: Mutex::new(Registry {
                operations,
                cancels: HashMap::new(),
            }),
            queue: Mutex::new(queue),
        })
    }

    fn registry(&self) -> std::sync::MutexGuard<'_, Registry> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Accepts `submission` (journaled before this returns), or returns the operation its
    /// idempotency key started before. `Ok((op, true))` is such a replay.
    pub fn submit(
        &self,
        mut submission: Submission,
        header_key: Option<String>,
    ) -> Result<(Operation, bool), ApiError> {
        submission.validate()?;
        let key = match (header_key, submission.idempotency_key.take()) {
            (Some(h), Some(b)) if h != b => {
                return Err(ApiError::bad_request(
                    "the Idempotency-Key header and the body's `idempotency_key` differ",
                ))
            }
            (h, b) => h.or(b),
        };
        let mut registry = self.registry();
        if let Some(key) = &key {
            let first = registry
                .operations
                .values()
                .find(|op| op.idempotency_key.as_ref() == Some(key));
            if let Some(first) = first {
                if first.submission == submission {
                    return Ok((first.clone(), true));
                }
                return Err(ApiError::new(
                    409,
                    codes::API_IDEMPOTENCY_KEY_REUSED,
                    format!(
                        "Idempotency-Key {key:?} started operation {} with another request",
                        first.id
                    ),
                ));
            }
        }
        if let Some(busy) = registry
            .operations
            .values()
            .find(|op| !op.status.is_finished())
        {
            return Err(ApiError::new(
                409,
                codes::API_OPERATION_IN_PROGRESS,
                format!("operation {} is {:?}", busy.id, busy.status).to_lowercase(),
            ));
        }
        let op = Operation {
            id: uuid::Uuid::now_v7().to_string(),
            status: Status::Queued,
            submission,
            idempotency_key: key,
            submitted_at: now(),
            started_at: None,
            finished_at: None,
            run_id: None,
            progress: Progress::default(),
            result: None,
            error: None,
            cancel_requested: false,
        };
        self.journal.record(&op).map_err(ApiError::from)?;
        registry.operations.insert(op.id.clone(), op.clone());
        drop(registry);
        let queued = self
            .queue
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .send(op.id.clone());
        if queued.is_err() {
            // The worker is gone (the daemon is stopping): the operation never runs.
            self.update(&op.id, |o| {
                o.finish(
                    Status::Failed,
                    None,
                    Some(ErrorBody::new(
                        codes::API_OPERATION_INTERRUPTED,
                        "the daemon is stopping",
                    )),
                )
            });
        }
        Ok((op, false))
    }

    pub fn get(&self, id: &str) -> Result<Operation, ApiError> {
        self.registry().operations.get(id).cloned().ok_or_else(|| {
            ApiError::new(
                404,
                codes::API_UNKNOWN_OPERATION,
                format!("no operation {id:?}"),
            )
        })
    }

    /// Newest first.
    pub fn list(&self) -> Vec<Operation> {
        self.registry().operations.values().rev().cloned().collect()
    }

    /// Asks a queued or running operation to stop: a queued one never starts, a running one
    /// is cancelled between models (in-flight warehouse queries cancelled, as Ctrl-C does).
    pub fn cancel(&self, id: &str) -> Result<Operation, ApiError> {
        let op = self.get(id)?;
        if op.status.is_finished() {
            return Err(ApiError::new(
                409,
                codes::API_OPERATION_FINISHED,
                format!("operation {id} already {:?}", op.status).to_lowercase(),
            ));
        }
        let handle = {
            let mut registry = self.registry();
            if let Some(op) = registry.operations.get_mut(id) {
                op.cancel_requested = true;
            }
            registry.cancels.get(id).cloned()
        };
        if let Some(handle) = handle {
            handle.cancel();
        }
        self.get(id)
    }

    /// Changes operation `id` in memory; a transition of its status is journaled.
    pub(super) fn update(
        &self,
        id: &str,
        change: impl FnOnce(&mut Operation),
    ) -> Option<Operation> {
        let mut registry = self.registry();
        let op = registry.operations.get_mut(id)?;
        let before = op.status;
        change(op);
        let after = op.clone();
        drop(registry);
        if after.status != before {
            if let Err(d) = self.journal.record(&after) {
                eprintln!("error: {}", d.message);
            }
        }
        Some(after)
    }

    /// A run's cancel handle, while it executes; a cancellation already asked for applies.
    pub(super) fn running_with(&self, id: &str, handle: CancelHandle) {
        let mut registry = self.registry();
        let asked = registry
            .operations
            .get(id)
            .is_some_and(|op| op.cancel_requested);
        registry.cancels.insert(id.to_string(), handle.clone());
        drop(registry);
        if asked {
            handle.cancel();
        }
    }

    pub(super) fn done_running(&self, id: &str) {
        self.registry().cancels.remove(id);
    }

    /// At shutdown: every operation not finished is failed (interrupted), its run cancelled.
    pub fn interrupt_all(&self) {
        let open: Vec<String> = {
            let registry = self.registry();
            for handle in registry.cancels.values() {
                handle.cancel();
            }
            registry
                .operations
                .values()
                .filter(|op| !op.status.is_finished())
                .map(|op| op.id.clone())
                .collect()
        };
        for id in open {
            self.update(&id, |op| {
                let result = op.result.take();
                op.finish(
                    Status::Failed,
                    result,
                    Some(ErrorBody::new(
                        codes::API_OPERATION_INTERRUPTED,
                        "the daemon stopped while this operation was queued or running",
                    )),
                )
            });
        }
    }

    /// How many operations are queued or running.
    pub fn in_flight(&self) -> usize {
        self.registry()
            .operations
            .values()
            .filter(|op| !op.status.is_finished())
            .count()
    }
}
