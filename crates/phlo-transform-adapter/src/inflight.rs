//! The warehouse queries one attempt has in flight (SPEC §64), so that an abort or a timeout
//! cancels them on the server instead of only dropping the client's future; and the ones it
//! finished, with the engine's statistics, for the attempt's record (SPEC §68).

use std::sync::{Arc, Mutex};

/// An engine's id of a running query: a PostgreSQL backend pid, a Trino query id.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct QueryId(pub String);

/// What the engine reported about one finished query.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QueryStatistics {
    pub id: QueryId,
    /// Rows and bytes read.
    pub rows: u64,
    pub bytes: u64,
    pub cpu_ms: u64,
    /// The query's elapsed time on the engine (queued to finished).
    pub wall_ms: u64,
    /// Rows written, for statements that write.
    pub written_rows: Option<u64>,
}

/// Shared between the scheduler and one attempt: the adapter registers each query while it
/// runs, the scheduler reads them to cancel; the adapter adds each finished query's
/// statistics, the scheduler records them with the attempt.
#[derive(Clone, Debug, Default)]
pub struct InFlight {
    running: Arc<Mutex<Vec<QueryId>>>,
    finished: Arc<Mutex<Vec<QueryStatistics>>>,
}

impl InFlight {
    /// Registers `id` until the returned guard is dropped (when the query ends, or when the
    /// attempt's future is dropped).
    pub fn track(&self, id: QueryId) -> Tracked {
        self.running.lock().expect("not poisoned").push(id.clone());
        Tracked {
            set: self.clone(),
            id,
        }
    }

    /// The queries running now.
    pub fn running(&self) -> Vec<QueryId> {
        self.running.lock().expect("not poisoned").clone()
    }

    /// Adds a finished query's statistics.
    pub fn finished(&self, statistics: QueryStatistics) {
        self.finished.lock().expect("not poisoned").push(statistics);
    }

    /// The statistics of the queries finished so far, in the order they finished.
    pub fn statistics(&self) -> Vec<QueryStatistics> {
        self.finished.lock().expect("not poisoned").clone()
    }
}

/// Unregisters its query when dropped.
pub struct Tracked {
    set: InFlight,
    id: QueryId,
}

impl Drop for Tracked {
    fn drop(&mut self) {
        let mut running = self.set.running.lock().expect("not poisoned");
        if let Some(i) = running.iter().position(|q| *q == self.id) {
            running.remove(i);
        }
    }
}
