//! Environments as branches of the warehouse's catalog (SPEC §44–45, §70): what commands bound
//! to a reference (`ref`, `--ref`, `promote`, `rollback`, `diff` across references) ask of an
//! engine whose catalog versions its tables, whichever catalog that is. A reference `main` is
//! the published branch; any other name is a candidate's branch, read and written through a
//! catalog of its own so the published branch is never written before `promote`.
//!
//! The only implementation today is Trino + Nessie (`trino::branches`), reached through
//! [`crate::Driver::branches`].

use async_trait::async_trait;
use datafusion::catalog::TableProvider;
use phlo_transform_project::AdapterTarget;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use crate::AdapterError;

/// The branches of one target's catalog.
#[async_trait]
pub trait BranchCatalog: Send + Sync {
    /// The catalog's branch behind reference `name`.
    fn branch_of(&self, name: &str) -> String;

    /// The engine's catalog reference `name` is read and written through.
    fn catalog_of(&self, name: &str) -> String;

    /// The target with reference `name`'s catalog and branch: what a command bound to it opens.
    fn target_for(&self, name: &str) -> AdapterTarget;

    /// The catalog's key of model `model_name` (`schema.table`, as the adapter places it).
    fn key_of(&self, model_name: &str) -> String;

    /// A short description of reference `name`'s place, for messages ("Nessie branch `dev`").
    fn describe(&self, name: &str) -> String;

    /// The head of reference `name`'s branch; `None` when there is no such branch.
    async fn head(&self, name: &str) -> Result<Option<String>, AdapterError>;

    /// Creates candidate `name`'s branch at `from`'s head `hash`, then its catalog. A failed
    /// provisioning leaves nothing behind; a branch of that name already there is refused
    /// (its provenance is unknown).
    async fn create(&self, name: &str, from: &str, hash: &str) -> Result<(), AdapterError>;

    /// Creates candidate `name`'s catalog when the engine does not have it (after a restart).
    async fn ensure_catalog(&self, name: &str) -> Result<(), AdapterError>;

    /// Deletes candidate `name`'s branch (expected at `hash`) and its catalog.
    async fn delete(&self, name: &str, hash: &str) -> Result<(), MoveError>;

    /// Points reference `name`'s branch, expected at `expected`, at commit `hash` (a publish
    /// or a rollback): the compare-and-swap of promotions.
    async fn reassign(&self, name: &str, expected: &str, hash: &str) -> Result<(), MoveError>;

    /// The output identity (as the adapter records it) of each model's table on reference
    /// `name` at its head; `None` for a missing table.
    async fn identities(
        &self,
        name: &str,
        models: &[&str],
    ) -> Result<HashMap<String, Option<String>>, AdapterError>;

    /// The keys whose content differs between commit `base` and reference `name` at `hash`.
    async fn changed_since(
        &self,
        name: &str,
        base: &str,
        hash: &str,
    ) -> Result<BTreeSet<String>, AdapterError> {
        self.changed_between((name, base), (name, hash)).await
    }

    /// The keys whose content differs between two references, each at a commit
    /// (`(reference, hash)`).
    async fn changed_between(
        &self,
        from: (&str, &str),
        to: (&str, &str),
    ) -> Result<BTreeSet<String>, AdapterError>;

    /// Model `model_name`'s table on reference `name` at commit `hash`, readable by
    /// DataFusion: a provider of `snapshot`, else of its current snapshot.
    async fn table_at(
        &self,
        name: &str,
        hash: &str,
        model_name: &str,
        snapshot: Option<i64>,
    ) -> Result<TableAt, AdapterError>;
}

/// A model's table on a branch at one commit, readable by DataFusion.
pub struct BranchTable {
    /// The catalog's key (`schema.table`).
    pub key: String,
    pub provider: Arc<dyn TableProvider>,
    /// The snapshot read.
    pub snapshot_id: i64,
}

/// What a branch has of a model's table at one commit.
pub enum TableAt {
    Found(BranchTable),
    /// No table of the model there.
    Missing,
    /// The table, without snapshot `id`; its snapshots, newest first, as (id, commit time
    /// in ms).
    NoSnapshot {
        id: i64,
        snapshots: Vec<(i64, i64)>,
    },
}

/// Why a publish or rollback did not move the branch.
pub enum MoveError {
    /// The branch was not at the expected head: nothing changed.
    Moved(String),
    Failed(AdapterError),
}
