//! PostgreSQL: models written by the adapter over one connection pool; relations only the
//! server has typed from `pg_attribute`.

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
use crate::{Adapter, AdapterError, PostgresEngine, Purpose, RESERVED_SUFFIXES};

pub struct Postgres;

#[async_trait]
impl Driver for Postgres {
    fn kind(&self) -> AdapterKind {
        AdapterKind::Postgres
    }

    fn environments(&self) -> EnvironmentSupport {
        EnvironmentSupport::None
    }

    /// A pool of `jobs` connections for a run, one for planning.
    async fn open(
        &self,
        target: &AdapterTarget,
        _root: &Path,
        _c: &Compilation,
        purpose: Purpose,
    ) -> Result<(Arc<dyn Adapter>, Vec<AdapterError>), AdapterError> {
        let s = &target.settings;
        let password = target
            .password()
            .map_err(|d| AdapterError::new(d.code, d.message))?;
        let jobs = match purpose {
            Purpose::Plan => 1,
            Purpose::Run { jobs } => jobs as u32,
        };
        let engine = PostgresEngine::connect(
            s.url.as_deref().unwrap_or_default(),
            password.as_deref(),
            s.default_schema.as_deref(),
            jobs,
        )
        .await?;
        Ok((Arc::new(engine), Vec::new()))
    }
}

impl WarehouseCatalog for Postgres {
    fn dialect(&self) -> Option<&'static str> {
        Some("postgres")
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

impl DiffCapabilities for Postgres {
    fn storage(&self) -> ModelStorage {
        ModelStorage::Warehouse
    }
}
