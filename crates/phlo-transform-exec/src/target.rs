//! Where a command runs: the workspace's root and warehouse, its state store, the adapter
//! `--adapter` chooses and the environment `--ref` names; opening the state, binding that
//! environment and opening its engine.

use phlo_transform_adapter::{Adapter, EnvironmentSupport, LocalEngine, Purpose};
use phlo_transform_compiler::Compilation;
use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;
use phlo_transform_project::{AdapterKind, Workspace};
use phlo_transform_state::{StateLocation, StateStore};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::environments::{bind_target, local_default_schema, Binding, MAIN};

/// Where the workspace at `root` keeps its local files: the artifacts (`.phlo/transform/`),
/// the embedded engine's warehouse (`.phlo/warehouse/`) and the state store: the one `state`
/// names (`--state` / `PHLO_STATE_URL`), else the SQLite file `state.db` among the artifacts.
#[derive(Clone, Debug)]
pub struct WorkspaceFiles {
    pub root: PathBuf,
    pub artifacts: PathBuf,
    pub warehouse: PathBuf,
    pub state: StateLocation,
}

impl WorkspaceFiles {
    /// C001 for a `state` that is neither a PostgreSQL URL nor a SQLite path.
    pub fn new(root: &Path, state: Option<&str>) -> Result<Self, Diagnostic> {
        let artifacts = root.join(".phlo").join("transform");
        let state = match state.map(StateLocation::parse) {
            Some(Ok(location)) => location,
            Some(Err(message)) => {
                return Err(Diagnostic::error(codes::INVALID_CONFIG, message).with_help(
                    "--state / PHLO_STATE_URL is a postgres:// or postgresql:// URL, sqlite://<path> or a file path",
                ))
            }
            None => StateLocation::Sqlite(artifacts.join("state.db")),
        };
        Ok(WorkspaceFiles {
            root: root.to_path_buf(),
            warehouse: root.join(".phlo").join("warehouse"),
            artifacts,
            state,
        })
    }

    /// Where a command runs over these files: `adapter` (`None`: the workspace's), the
    /// environment `reference` (`None`: main).
    pub fn target<'a>(
        &'a self,
        adapter: Option<&'a str>,
        reference: Option<&'a str>,
    ) -> CommandTarget<'a> {
        CommandTarget {
            root: &self.root,
            warehouse: &self.warehouse,
            artifacts: &self.artifacts,
            state: &self.state,
            adapter,
            reference,
        }
    }
}

/// The target of one command, as a front end was asked for it.
#[derive(Clone, Copy)]
pub struct CommandTarget<'a> {
    pub root: &'a Path,
    /// The embedded engine's warehouse root (`.phlo/warehouse`).
    pub warehouse: &'a Path,
    /// The artifact directory (`.phlo/transform`), where evidence is exported.
    pub artifacts: &'a Path,
    /// The state store (`--state`; the front end's default otherwise).
    pub state: &'a StateLocation,
    /// `--adapter <name>`; `None`: the workspace's `[adapter]`.
    pub adapter: Option<&'a str>,
    /// `--ref <name>`; `None`: main.
    pub reference: Option<&'a str>,
}

impl CommandTarget<'_> {
    /// Opens the state store, creating or migrating it as needed: SQLite or PostgreSQL, the
    /// same trait object either way. Errors show a PostgreSQL URL without its password.
    pub async fn open_state(&self) -> Result<Arc<dyn StateStore>, Diagnostic> {
        phlo_transform_state::open(self.state)
            .await
            .map_err(|e| self.state.unavailable(e))
    }

    /// Opens the state store for a command that only reads it (`inspect`, `explain`, `list`,
    /// `state …`): nothing is created. A SQLite state that does not exist yet reads as empty,
    /// unless the workspace directory does not exist either: then the P001 every command
    /// gives for a missing workspace, not an empty history of a workspace that is not there.
    pub async fn open_state_read_only(&self) -> Result<Arc<dyn StateStore>, Diagnostic> {
        if matches!(self.state, StateLocation::Sqlite(p) if !p.exists()) && !self.root.is_dir() {
            // Workspace::load fails at once, with P001, on a directory that does not exist.
            Workspace::load(self.root)?;
        }
        phlo_transform_state::open_existing(self.state)
            .await
            .map_err(|e| self.state.unavailable(e))
    }

    /// The environments of the workspace (`ref`, `promote`, `rollback`): Nessie branches when
    /// the target is Trino (`[adapter.nessie]` required), else the embedded engine's.
    pub async fn environments(&self) -> Result<crate::environments::Environments, Diagnostic> {
        let store = self.open_state().await?;
        let target = Workspace::load(self.root)?.adapter_target(self.adapter)?;
        crate::environments::for_target(store, self.warehouse, &target, self.root)
            .map(|envs| envs.with_artifacts(self.artifacts))
    }

    /// The environment `--ref` names (default main) when the target has environments (the
    /// local engine); `None` on other adapters without `--ref`.
    pub async fn bind(
        &self,
        c: &Compilation,
        store: Arc<dyn StateStore>,
    ) -> Result<Option<Binding>, Diagnostic> {
        let target = c.workspace.adapter_target(self.adapter)?;
        let environments = phlo_transform_adapter::driver(target.kind()).environments();
        if environments == EnvironmentSupport::Branches {
            // `main` is the target's own catalog and branch: no binding, as before environments.
            let Some(name) = self.reference.filter(|r| *r != MAIN) else {
                return Ok(None);
            };
            if let Some(view) = c
                .models
                .iter()
                .find(|m| m.materialization == phlo_transform_project::Materialization::View)
            {
                return Err(Diagnostic::error(
                    codes::ENVIRONMENTS_UNSUPPORTED,
                    format!(
                        "--ref {name}: view model `{}` cannot be built on a Trino candidate: views live in the views catalog, which Nessie branches do not version",
                        view.name.as_str()
                    ),
                )
                .with_help("run view models on main only, or make them tables (`@table`)"));
            }
            let envs = crate::environments::for_target(store, self.warehouse, &target, self.root)?;
            return envs.bind(Some(name), None).await.map(Some);
        }
        bind_target(
            store,
            self.warehouse,
            target.kind(),
            environments,
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
        if let Some(branch) = &binding.branch {
            return phlo_transform_adapter::open_diagnosed(&branch.target, self.root, c, purpose)
                .await;
        }
        let (engine, problems) = binding.open_engine(c, purpose).await;
        Ok((
            engine,
            phlo_transform_adapter::unreadable_relations(problems),
        ))
    }

    /// The embedded local engine over the warehouse with every source registered, reading
    /// the environment `--ref` names (default main): what `diff` reads the model's own sides
    /// with on the embedded engine (its Delta versions). The state is only read. Relations it
    /// cannot read come back as warnings.
    pub async fn open_local(
        &self,
        c: &Compilation,
    ) -> Result<(LocalEngine, Vec<Diagnostic>), Diagnostic> {
        let store = self.open_state_read_only().await?;
        let binding = bind_target(
            store,
            self.warehouse,
            AdapterKind::Local,
            EnvironmentSupport::Pins,
            local_default_schema(c).as_deref(),
            self.reference,
        )
        .await?
        .expect("the local engine has environments");
        let (engine, problems) = binding.open_local(c).await;
        Ok((
            engine,
            phlo_transform_adapter::unreadable_relations(problems),
        ))
    }
}
