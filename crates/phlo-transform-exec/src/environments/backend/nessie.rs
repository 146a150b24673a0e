//! Trino + Nessie's environments: a reference is a Nessie branch (`branches.rs`).

use async_trait::async_trait;
use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;
use phlo_transform_state::{RefEvent, RefRecord};

use super::EnvironmentBackend;
use crate::environments::gate::Gate;
use crate::environments::promote::Promotion;
use crate::environments::rollback::Rollback;
use crate::environments::{Environments, MAIN};

/// Trino + Nessie's environments: a reference is a Nessie branch. Candidates are promoted
/// into `main` only, and only `main` has promotions to roll back.
pub(crate) struct OnBranches<'e>(pub &'e Environments);

#[async_trait]
impl EnvironmentBackend for OnBranches<'_> {
    fn accepts_promotion_into(&self, to: &str) -> Result<(), Diagnostic> {
        if to == MAIN {
            return Ok(());
        }
        Err(Diagnostic::error(
            codes::ENVIRONMENTS_UNSUPPORTED,
            format!("promoting into `{to}`: on Trino + Nessie candidates are promoted into `main`"),
        )
        .with_help("`promote <candidate> --to main`"))
    }

    async fn base_gates(
        &self,
        candidate: &RefRecord,
        target: &RefRecord,
    ) -> Result<Vec<Gate>, Diagnostic> {
        self.0.branch_base_gates(candidate, target).await
    }

    async fn publish(
        &self,
        candidate: &RefRecord,
        target: &RefRecord,
        promotion: &Promotion,
    ) -> Result<String, Diagnostic> {
        self.0.branch_publish(candidate, target, promotion).await
    }

    fn accepts_rollback_of(&self, reference: &str) -> Result<(), Diagnostic> {
        if reference == MAIN {
            return Ok(());
        }
        Err(Diagnostic::error(
            codes::ENVIRONMENTS_UNSUPPORTED,
            format!("rolling back `{reference}`: on Trino + Nessie only `main` has promotions to roll back"),
        )
        .with_help("`rollback --ref main --to <promotion>`"))
    }

    fn accepts_model_rollback(&self, model: &str, version: i64) -> Result<(), Diagnostic> {
        Err(Diagnostic::error(
            codes::ENVIRONMENTS_UNSUPPORTED,
            format!("rollback {model} --to {version}: table time travel is not implemented on Trino + Nessie"),
        )
        .with_help("roll the environment back instead: `rollback --ref main --to <promotion>`"))
    }

    async fn restore_promoted(
        &self,
        reference: &str,
        event: &RefEvent,
        before: RefRecord,
    ) -> Result<Rollback, Diagnostic> {
        self.0.branch_rollback(reference, event, before).await
    }
}
