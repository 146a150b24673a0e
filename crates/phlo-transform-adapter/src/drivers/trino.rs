//! Trino over Iceberg: models are Iceberg tables (on Nessie branches with `[adapter.nessie]`),
//! views live in the views catalog; `catalog.schema.table` relations are typed from Trino's
//! metadata before the compile.

use async_trait::async_trait;
use phlo_transform_compiler::Compilation;
use phlo_transform_core::Diagnostic;
use phlo_transform_project::{AdapterKind, AdapterTarget, Materialization, Workspace};
use std::path::Path;
use std::sync::Arc;

use crate::branching::BranchCatalog;
use crate::capabilities::{
    DiffCapabilities, Driver, EnvironmentSupport, ModelStorage, WarehouseCatalog,
};
use crate::{Adapter, AdapterError, Purpose, RESERVED_SUFFIXES};

pub struct Trino;

#[async_trait]
impl Driver for Trino {
    fn kind(&self) -> AdapterKind {
        AdapterKind::Trino
    }

    fn environments(&self) -> EnvironmentSupport {
        EnvironmentSupport::Branches
    }

    fn branches(
        &self,
        target: &AdapterTarget,
        root: &Path,
    ) -> Result<Arc<dyn BranchCatalog>, AdapterError> {
        Ok(Arc::new(crate::trino::branches::Branches::new(
            target, root,
        )?))
    }

    /// View models live in the views catalog: the engine is told which models they are.
    async fn open(
        &self,
        target: &AdapterTarget,
        root: &Path,
        c: &Compilation,
        _purpose: Purpose,
    ) -> Result<(Arc<dyn Adapter>, Vec<AdapterError>), AdapterError> {
        let settings = crate::trino::settings(target, root)?;
        let views = c
            .models
            .iter()
            .filter(|m| m.materialization == Materialization::View)
            .map(|m| m.name.as_str().to_string())
            .collect();
        let engine = crate::trino::TrinoEngine::connect(settings, views).await?;
        Ok((Arc::new(engine), Vec::new()))
    }
}

impl WarehouseCatalog for Trino {
    fn dialect(&self) -> Option<&'static str> {
        Some("trino")
    }

    fn add_named_sources(
        &self,
        ws: &mut Workspace,
        target: &AdapterTarget,
        root: &Path,
    ) -> Result<(), Diagnostic> {
        crate::trino::add_warehouse_sources(ws, target, root)
    }

    fn reserved_suffixes(&self) -> &'static [&'static str] {
        &RESERVED_SUFFIXES
    }
}

/// Trino's `NaN <> NaN` holds, and it inlines `WITH` queries.
impl DiffCapabilities for Trino {
    fn storage(&self) -> ModelStorage {
        ModelStorage::Branches
    }

    fn nan_equals_nan(&self) -> bool {
        false
    }

    fn materializes_with(&self) -> bool {
        false
    }
}
