//! Where a command runs: the workspace's root and warehouse, the adapter `--adapter` chooses
//! and the environment `--ref` names; binding that environment and opening its engine.

use phlo_transform_adapter::{Adapter, Purpose};
use phlo_transform_compiler::Compilation;
use phlo_transform_core::Diagnostic;
use phlo_transform_state::StateStore;
use std::path::Path;
use std::sync::Arc;

use crate::environments::{bind_target, Binding};

/// The target of one command, as a front end was asked for it.
#[derive(Clone, Copy)]
pub struct CommandTarget<'a> {
    pub root: &'a Path,
    /// The embedded engine's warehouse root (`.phlo/warehouse`).
    pub warehouse: &'a Path,
    /// `--adapter <name>`; `None`: the workspace's `[adapter]`.
    pub adapter: Option<&'a str>,
    /// `--ref <name>`; `None`: main.
    pub reference: Option<&'a str>,
}

impl CommandTarget<'_> {
    /// The environment `--ref` names (default main) when the target has environments (the
    /// local engine); `None` on other adapters without `--ref`.
    pub async fn bind(
        &self,
        c: &Compilation,
        store: Arc<dyn StateStore>,
    ) -> Result<Option<Binding>, Diagnostic> {
        let target = c.workspace.adapter_target(self.adapter)?;
        bind_target(
            store,
            self.warehouse,
            target.kind(),
            target.settings.default_schema.as_deref(),
            self.reference,
        )
        .await
    }

    /// The engine of `binding` when there is one, else the one `--adapter` chooses. Problems
    /// that leave it usable (a relation it cannot read) come back as warnings.
    pub async fn open_engine(
        &self,
        c: &Compilation,
        binding: Option<&Binding>,
        purpose: Purpose,
    ) -> Result<(Arc<dyn Adapter>, Vec<Diagnostic>), Diagnostic> {
        let Some(binding) = binding else {
            let target = c.workspace.adapter_target(self.adapter)?;
            return phlo_transform_adapter::open_diagnosed(&target, self.root, c, purpose).await;
        };
        let (engine, problems) = binding.open_engine(c, purpose).await;
        Ok((
            engine,
            phlo_transform_adapter::unreadable_relations(problems),
        ))
    }
}
