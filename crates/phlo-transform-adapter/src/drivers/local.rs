//! The embedded engine: DataFusion over Delta tables under `<root>/.phlo/warehouse`.

use async_trait::async_trait;
use phlo_transform_compiler::Compilation;
use phlo_transform_project::{AdapterKind, AdapterTarget};
use std::path::Path;
use std::sync::Arc;

use crate::capabilities::{
    DiffCapabilities, Driver, EnvironmentSupport, ModelStorage, WarehouseCatalog,
};
use crate::{Adapter, AdapterError, LocalEngine, Purpose};

pub struct Local;

#[async_trait]
impl Driver for Local {
    fn kind(&self) -> AdapterKind {
        AdapterKind::Local
    }

    fn environments(&self) -> EnvironmentSupport {
        EnvironmentSupport::Pins
    }

    /// Planning opens no table; a run registers every source and model table.
    async fn open(
        &self,
        target: &AdapterTarget,
        root: &Path,
        c: &Compilation,
        purpose: Purpose,
    ) -> Result<(Arc<dyn Adapter>, Vec<AdapterError>), AdapterError> {
        let warehouse = root.join(".phlo").join("warehouse");
        let default_schema = target.settings.default_schema.as_deref();
        Ok(match purpose {
            Purpose::Plan => (
                Arc::new(LocalEngine::unregistered(&warehouse, default_schema)),
                Vec::new(),
            ),
            Purpose::Run { .. } => {
                let (engine, problems) = LocalEngine::open(&warehouse, c, default_schema).await;
                (Arc::new(engine), problems)
            }
        })
    }
}

/// The workspace's own `[transform] dialect`; every relation is a model or a declared source.
impl WarehouseCatalog for Local {
    fn dialect(&self) -> Option<&'static str> {
        None
    }
}

impl DiffCapabilities for Local {
    fn storage(&self) -> ModelStorage {
        ModelStorage::Embedded
    }
}
