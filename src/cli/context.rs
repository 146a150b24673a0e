//! The steps every command shares: where the workspace's files are, loading and compiling it
//! for the chosen target, opening the state store and the engine. A leaf of the CLI: the
//! commands import it, it imports none of them.

use phlo_transform_adapter::SchemaRead;
use phlo_transform_compiler::Compilation;
use phlo_transform_core::Diagnostic;
use phlo_transform_exec::target::{CommandTarget, WorkspaceFiles};
use phlo_transform_state::{StateLocation, StateStore};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Exit codes: 0 success, 1 model or test failures, 2 usage or compile errors.
pub const EXIT_OK: u8 = 0;
pub const EXIT_FAILURES: u8 = 1;
pub const EXIT_ERRORS: u8 = 2;

/// Paths of one workspace's local files.
pub struct Paths {
    pub root: PathBuf,
    pub artifacts: PathBuf,
    pub warehouse: PathBuf,
    pub state: StateLocation,
    /// `--adapter <name>`.
    pub adapter: Option<String>,
    /// `--ref <name>`: the environment.
    pub reference: Option<String>,
}

impl Paths {
    /// The workspace at `root`'s files ([`WorkspaceFiles`]), `--adapter`'s target.
    pub fn new(
        root: &Path,
        state: Option<&str>,
        adapter: Option<String>,
    ) -> Result<Self, Diagnostic> {
        let files = WorkspaceFiles::new(root, state)?;
        Ok(Paths {
            root: files.root,
            state: files.state,
            warehouse: files.warehouse,
            artifacts: files.artifacts,
            adapter,
            reference: None,
        })
    }
}

impl Paths {
    /// Where a command runs, as the library reads it.
    pub fn target(&self) -> CommandTarget<'_> {
        CommandTarget {
            root: &self.root,
            warehouse: &self.warehouse,
            artifacts: &self.artifacts,
            state: &self.state,
            adapter: self.adapter.as_deref(),
            reference: self.reference.as_deref(),
        }
    }
}

/// Loads and compiles the workspace at `paths.root`.
///
/// A command compiles once and exits, so the compilation is leaked on purpose: freeing every
/// AST, plan and schema at exit costs about 0.4 s at 10,000 models and buys nothing.
pub fn compile(paths: &Paths) -> Result<&'static Compilation, Diagnostic> {
    compile_reading(paths, SchemaRead::Cached)
}

/// [`compile`] for `plan` and `run`: the warehouse relations the models read are typed from
/// the warehouse's catalog, refreshing the schema cache.
pub fn compile_refreshed(paths: &Paths) -> Result<&'static Compilation, Diagnostic> {
    compile_reading(paths, SchemaRead::Refresh)
}

fn compile_reading(paths: &Paths, read: SchemaRead) -> Result<&'static Compilation, Diagnostic> {
    let c = phlo_transform_exec::compile_for_target(
        &paths.root,
        paths.adapter.as_deref(),
        read,
        Some(&paths.state),
    )?;
    Ok(Box::leak(Box::new(c)))
}

/// Opens the state store `--state` / `PHLO_STATE_URL` names ([`CommandTarget::open_state`]).
pub async fn open_state(paths: &Paths) -> Result<Arc<dyn StateStore>, Diagnostic> {
    paths.target().open_state().await
}

/// Opens the state store for a command that only reads it
/// ([`CommandTarget::open_state_read_only`]).
pub async fn open_state_read_only(paths: &Paths) -> Result<Arc<dyn StateStore>, Diagnostic> {
    paths.target().open_state_read_only().await
}
