//! Cooperative cancellation of a run: Ctrl-C in the command line, an API call in a daemon.

use std::sync::Arc;
use tokio::sync::watch;

/// Cancels the run it was given to. Clones share one signal; cancelling is idempotent.
#[derive(Clone, Debug)]
pub struct CancelHandle(Arc<watch::Sender<bool>>);

impl Default for CancelHandle {
    fn default() -> Self {
        CancelHandle(Arc::new(watch::Sender::new(false)))
    }
}

impl CancelHandle {
    /// Stops the run: in-flight models are aborted and recorded `cancelled`, nothing new
    /// starts, and the run ends `cancelled`.
    pub fn cancel(&self) {
        self.0.send_replace(true);
    }

    pub fn is_cancelled(&self) -> bool {
        *self.0.borrow()
    }

    /// Resolves once `cancel` has been called (at once if it already was).
    pub async fn cancelled(&self) {
        let mut rx = self.0.subscribe();
        // The sender lives in `self`, so waiting cannot fail.
        let _ = rx.wait_for(|c| *c).await;
    }
}
