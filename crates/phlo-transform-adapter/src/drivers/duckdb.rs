//! DuckDB through a prebuilt libduckdb (feature `duckdb`): a database file under the
//! workspace; relations only the file has typed from `duckdb_columns()`. A build without the
//! feature still types and plans for DuckDB; only opening the engine is refused.

use async_trait::async_trait;
use phlo_transform_compiler::Compilation;
use phlo_transform_core::Diagnostic;
use phlo_transform_project::{AdapterKind, AdapterTarget, SourceDecl, Workspace};
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

use crate::capabilities::{
    DiffCapabilities, Driver, EnvironmentSupport, ModelStorage, WarehouseCatalog,
};
use crate::external::{warehouse_sources, SchemaRead};
use crate::{Adapter, AdapterError, Purpose, RESERVED_SUFFIXES};

pub struct DuckDb;

#[async_trait]
impl Driver for DuckDb {
    fn kind(&self) -> AdapterKind {
        AdapterKind::DuckDb
    }

    fn environments(&self) -> EnvironmentSupport {
        EnvironmentSupport::None
    }

    /// Planning never creates the database file: without one, nothing exists yet.
    #[cfg(feature = "duckdb")]
    async fn open(
        &self,
        target: &AdapterTarget,
        root: &Path,
        _c: &Compilation,
        purpose: Purpose,
    ) -> Result<(Arc<dyn Adapter>, Vec<AdapterError>), AdapterError> {
        let s = &target.settings;
        let path = root.join(s.path.as_deref().unwrap_or("warehouse.duckdb"));
        let engine = if purpose == Purpose::Plan && !path.exists() {
            crate::DuckDbEngine::empty(s.default_schema.as_deref())?
        } else {
            crate::DuckDbEngine::open(&path, s.default_schema.as_deref())?
        };
        Ok((Arc::new(engine), Vec::new()))
    }

    #[cfg(not(feature = "duckdb"))]
    async fn open(
        &self,
        target: &AdapterTarget,
        _root: &Path,
        _c: &Compilation,
        _purpose: Purpose,
    ) -> Result<(Arc<dyn Adapter>, Vec<AdapterError>), AdapterError> {
        Err(AdapterError::new(
            phlo_transform_core::diagnostic::codes::UNKNOWN_ADAPTER,
            format!(
                "adapter `{}`: this build has no DuckDB; build with `--features duckdb` \
                 after `export DUCKDB_LIB_DIR=$(scripts/duckdb.sh)` (see docs/adapters.md)",
                target.name
            ),
        ))
    }
}

impl WarehouseCatalog for DuckDb {
    fn dialect(&self) -> Option<&'static str> {
        Some("duckdb")
    }

    fn sources_for_missing(
        &self,
        ws: &Workspace,
        target: &AdapterTarget,
        root: &Path,
        read: SchemaRead,
        missing: &BTreeSet<Vec<String>>,
    ) -> (Vec<SourceDecl>, Vec<Diagnostic>) {
        warehouse_sources(ws, target, root, read, missing)
    }

    fn reserved_suffixes(&self) -> &'static [&'static str] {
        &RESERVED_SUFFIXES
    }
}

impl DiffCapabilities for DuckDb {
    fn storage(&self) -> ModelStorage {
        ModelStorage::Warehouse
    }
}
