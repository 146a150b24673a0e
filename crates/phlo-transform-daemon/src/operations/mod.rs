//! The operation plane (`POST /v1/operations`): a submission becomes an [`Operation`] whose
//! lifecycle is queued → running → succeeded | failed | cancelled. Every transition is
//! journaled ([`journal`]) before it is acknowledged; one mutating operation at a time
//! (API008); an `Idempotency-Key` returns the operation it first started (API016 for the same
//! key with another request). [`execute`] runs them, one after the other, on one thread.

mod execute;
mod journal;
mod operation;
mod registry;

pub use execute::Worker;
pub use operation::Submission;
pub use registry::Operations;
