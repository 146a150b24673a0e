//! What an engine is to the commands beyond building a model: one trait per capability, one
//! implementation per engine (`drivers/`), reached from a target's [`AdapterKind`] through
//! [`crate::driver`], whether or not the engine is open ([`crate::Adapter::kind`]). The kind is
//! read once, in the configuration; nothing past this crate asks an engine's name.
//!
//! The capabilities are split by when a command needs them: the [`WarehouseCatalog`] before
//! the workspace is compiled (nothing is open yet), the others once a target is chosen.

use async_trait::async_trait;
use phlo_transform_compiler::Compilation;
use phlo_transform_core::Diagnostic;
use phlo_transform_project::{AdapterKind, AdapterTarget, SourceDecl, Workspace};
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

use crate::branching::BranchCatalog;
use crate::external::SchemaRead;
use crate::{Adapter, AdapterError};

/// What the adapter is opened for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Purpose {
    /// Naming and introspection only (`plan`, `list`, `inspect`): the local engine opens no
    /// tables.
    Plan,
    /// Executing models and tests, at most `jobs` at once.
    Run { jobs: usize },
}

/// One engine: its kind, how it is opened, and every capability commands ask of it.
#[async_trait]
pub trait Driver: WarehouseCatalog + DiffCapabilities + Send + Sync {
    /// The engine this driver opens.
    fn kind(&self) -> AdapterKind;

    /// Where commands bound to a reference (`--ref`, promote, rollback) keep environments.
    fn environments(&self) -> EnvironmentSupport;

    /// The branches of `target`'s catalog, for an engine whose environments are
    /// [`EnvironmentSupport::Branches`]; Y015 elsewhere.
    fn branches(
        &self,
        target: &AdapterTarget,
        _root: &Path,
    ) -> Result<Arc<dyn BranchCatalog>, AdapterError> {
        Err(AdapterError::new(
            phlo_transform_core::diagnostic::codes::ENVIRONMENTS_UNSUPPORTED,
            format!(
                "adapter `{}` ({}) keeps no branches",
                target.name,
                self.kind().as_str()
            ),
        ))
    }

    /// Opens `target` for workspace `c` rooted at `root`. Problems that leave the engine
    /// usable (a source it could not register) come back beside it; a warehouse that cannot
    /// be reached is an error (A008).
    async fn open(
        &self,
        target: &AdapterTarget,
        root: &Path,
        c: &Compilation,
        purpose: Purpose,
    ) -> Result<(Arc<dyn Adapter>, Vec<AdapterError>), AdapterError>;
}

/// What the compiler learns from the warehouse of a target before anything runs: its dialect,
/// the relations only it has (typed from its metadata), the names it keeps for itself.
pub trait WarehouseCatalog {
    /// The dialect models are type-checked against (`dialects/<name>.toml`); `None`: the
    /// workspace's `[transform] dialect`.
    fn dialect(&self) -> Option<&'static str>;

    /// Adds to `ws`, before its relations are resolved, the sources this warehouse names in
    /// full that the models read (Trino: `catalog.schema.table`).
    fn add_named_sources(
        &self,
        _ws: &mut Workspace,
        _target: &AdapterTarget,
        _root: &Path,
    ) -> Result<(), Diagnostic> {
        Ok(())
    }

    /// Sources for those of `missing` (the parts of relations nothing in `ws` resolves) that
    /// only this warehouse has, with the warnings to show (A013).
    fn sources_for_missing(
        &self,
        _ws: &Workspace,
        _target: &AdapterTarget,
        _root: &Path,
        _read: SchemaRead,
        _missing: &BTreeSet<Vec<String>>,
    ) -> (Vec<SourceDecl>, Vec<Diagnostic>) {
        (Vec::new(), Vec::new())
    }

    /// Table-name suffixes the engine keeps for relations beside a model's table (none on
    /// the local engine).
    fn reserved_suffixes(&self) -> &'static [&'static str] {
        &[]
    }

    /// A012 for every model of `ws` whose table on `target` ends with a reserved suffix.
    fn reserved_names(&self, ws: &Workspace, target: &AdapterTarget) -> Vec<Diagnostic> {
        crate::reserved::reserved_names(ws, target, self.reserved_suffixes())
    }
}

/// Where a workspace's models live on an engine, which decides the sides `diff` can read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModelStorage {
    /// The embedded engine's Delta tables (and its environments).
    Embedded,
    /// Iceberg tables on Nessie branches, read from their files; the model's SQL run by the
    /// engine (Trino).
    Branches,
    /// A warehouse (DuckDB, PostgreSQL) read through its adapter: the model's relation and
    /// its SQL run there.
    Warehouse,
}

/// How the data diff treats an engine's sides when it compares them in the engine.
pub trait DiffCapabilities {
    /// Where the models live.
    fn storage(&self) -> ModelStorage;

    /// Whether NaN equals NaN in the engine's comparisons (DuckDB, PostgreSQL); where
    /// `NaN <> NaN` holds (Trino), NaNs are compared apart.
    fn nan_equals_nan(&self) -> bool {
        true
    }

    /// Whether a `WITH` query read twice in a statement is evaluated once (DuckDB and
    /// PostgreSQL materialise it; Trino inlines it).
    fn materializes_with(&self) -> bool {
        true
    }
}

/// How an engine keeps environments (SPEC §73–80).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EnvironmentSupport {
    /// Pinned Delta versions under the local warehouse (the embedded engine).
    Pins,
    /// Nessie branches behind the engine's Iceberg catalog (Trino with `[adapter.nessie]`).
    Branches,
    /// One environment, the warehouse itself: `--ref` is refused (Y015).
    None,
}
