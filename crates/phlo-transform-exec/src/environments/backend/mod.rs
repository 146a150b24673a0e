//! Where an environment's pointers live and how they move: one [`EnvironmentBackend`] per way
//! of keeping environments (the engine's driver says which,
//! [`phlo_transform_adapter::EnvironmentSupport`]). Promote and rollback are written once, in
//! `promote.rs` and `rollback.rs`; a backend supplies only what differs — which references
//! may be promoted into or rolled back, the `base` and `conflicts` gates, and the publish.
//!
//! - [`pins::Pins`]: the embedded engine's. A reference is its pointers in the state store;
//!   the publish and the restore are one state transaction under compare-and-swap.
//! - [`nessie::OnBranches`]: Trino + Nessie. A reference is a Nessie branch; the publish and
//!   the restore reassign the branch (Nessie's compare-and-swap), then the records follow
//!   (`branches.rs`).

mod nessie;
mod pins;
mod select;

use async_trait::async_trait;
use phlo_transform_core::Diagnostic;
use phlo_transform_state::{RefEvent, RefRecord};

use super::gate::Gate;
use super::promote::Promotion;
use super::rollback::Rollback;

#[async_trait]
pub(crate) trait EnvironmentBackend: Send + Sync {
    /// Y015 when a promotion into `to` is not possible here.
    fn accepts_promotion_into(&self, _to: &str) -> Result<(), Diagnostic> {
        Ok(())
    }

    /// The `base` gate (the target is still where the candidate was created from) and the
    /// `conflicts` gate (nothing changed on both sides since then).
    async fn base_gates(
        &self,
        candidate: &RefRecord,
        target: &RefRecord,
    ) -> Result<Vec<Gate>, Diagnostic>;

    /// Publishes `promotion` (every gate passed) under the target's writer lease: the target
    /// points where the candidate does, with the candidate's records; the PromotionRecord's
    /// id. Refused as stale (Y012) when either moved since the gates were evaluated.
    async fn publish(
        &self,
        candidate: &RefRecord,
        target: &RefRecord,
        promotion: &Promotion,
    ) -> Result<String, Diagnostic>;

    /// Y015 when `reference` cannot be rolled back to a promotion here.
    fn accepts_rollback_of(&self, _reference: &str) -> Result<(), Diagnostic> {
        Ok(())
    }

    /// Y015 when one model's table cannot be rolled back to a version here.
    fn accepts_model_rollback(&self, _model: &str, _version: i64) -> Result<(), Diagnostic> {
        Ok(())
    }

    /// Restores `reference` to `before`, what promotion `event` replaced, under its writer
    /// lease, and records the rollback.
    async fn restore_promoted(
        &self,
        reference: &str,
        event: &RefEvent,
        before: RefRecord,
    ) -> Result<Rollback, Diagnostic>;
}
