//! The embedded engine's environments: pointers in the state store.

use async_trait::async_trait;
use phlo_transform_core::Diagnostic;
use phlo_transform_state::{RefEvent, RefRecord};

use super::EnvironmentBackend;
use crate::environments::gate::Gate;
use crate::environments::promote::{base_gates, Promotion};
use crate::environments::rollback::Rollback;
use crate::environments::Environments;

/// A reference is its pointers in the state store (`promote.rs`, `rollback.rs`).
pub(crate) struct Pins<'e>(pub &'e Environments);

#[async_trait]
impl EnvironmentBackend for Pins<'_> {
    async fn base_gates(
        &self,
        candidate: &RefRecord,
        target: &RefRecord,
    ) -> Result<Vec<Gate>, Diagnostic> {
        let (base, conflicts) = base_gates(candidate, target);
        Ok(vec![base, conflicts])
    }

    async fn publish(
        &self,
        candidate: &RefRecord,
        target: &RefRecord,
        promotion: &Promotion,
    ) -> Result<String, Diagnostic> {
        self.0.publish_pins(candidate, target, promotion).await
    }

    async fn restore_promoted(
        &self,
        reference: &str,
        event: &RefEvent,
        before: RefRecord,
    ) -> Result<Rollback, Diagnostic> {
        self.0
            .restore(reference, before.pointers, None, &event.event_id)
            .await
    }
}
