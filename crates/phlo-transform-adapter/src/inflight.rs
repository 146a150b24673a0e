//! The warehouse queries one attempt has in flight (SPEC §64), so that an abort or a timeout
//! cancels them on the server instead of only dropping the client's future.

use std::sync::{Arc, Mutex};

/// An engine's id of a running query: a PostgreSQL backend pid, a Trino query id.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct QueryId(pub String);

/// Shared between the scheduler and one attempt: the adapter registers each query while it
/// runs, the scheduler reads them to cancel.
#[derive(Clone, Debug, Default)]
pub struct InFlight(Arc<Mutex<Vec<QueryId>>>);

impl InFlight {
    /// Registers `id` until the returned guard is dropped (when the query ends, or when the
    /// attempt's future is dropped).
    pub fn track(&self, id: QueryId) -> Tracked {
        self.0.lock().expect("not poisoned").push(id.clone());
        Tracked {
            set: self.clone(),
            id,
        }
    }

    /// The queries running now.
    pub fn running(&self) -> Vec<QueryId> {
        self.0.lock().expect("not poisoned").clone()
    }
}

/// Unregisters its query when dropped.
pub struct Tracked {
    set: InFlight,
    id: QueryId,
}

impl Drop for Tracked {
    fn drop(&mut self) {
        let mut running = self.set.0.lock().expect("not poisoned");
        if let Some(i) = running.iter().position(|q| *q == self.id) {
            running.remove(i);
        }
    }
}
