//! What every handler answers from: the workspace's files, the target, the one live
//! compilation and the async runtime the library's calls run on. A leaf: handlers and
//! operations import it, it imports none of them.

use crate::api_error::ApiError;
use phlo_transform_core::diagnostic::codes;
use phlo_transform_exec::inspect_command::InspectContext;
use phlo_transform_exec::target::{CommandTarget, WorkspaceFiles};
use phlo_transform_live::{LiveWorkspace, Published};
use phlo_transform_state::StateLocation;
use std::sync::{Arc, Mutex};

/// What an inspection context was opened for: the generation, and whether the state existed.
type InspectKey = (u64, bool);

pub struct Context {
    pub files: WorkspaceFiles,
    /// `--adapter`; `None`: the workspace's `[adapter]`.
    pub adapter: Option<String>,
    pub live: LiveWorkspace,
    /// The runtime of the command line's process: request threads `block_on` it.
    pub runtime: tokio::runtime::Handle,
    /// What inspecting a model of main opens, for the generation it was opened for: opening
    /// the state and the engine is most of an inspection's cost, and nothing it keeps changes
    /// within a generation (see [`InspectContext`]).
    inspecting: Mutex<Option<(InspectKey, Arc<InspectContext>)>>,
}

impl Context {
    pub fn new(
        files: WorkspaceFiles,
        adapter: Option<String>,
        live: LiveWorkspace,
        runtime: tokio::runtime::Handle,
    ) -> Context {
        Context {
            files,
            adapter,
            live,
            runtime,
            inspecting: Mutex::new(None),
        }
    }

    /// The inspection context of `published` on main, opened once per generation, and again
    /// once a SQLite state that did not exist appears (the first run's records are then in a
    /// file the context did not open).
    pub async fn inspect_context(
        &self,
        published: &Published,
    ) -> Result<Arc<InspectContext>, ApiError> {
        let key = (published.generation, self.state_exists());
        if let Some((k, opened)) = &*self.inspecting.lock().expect("not poisoned") {
            if *k == key {
                return Ok(opened.clone());
            }
        }
        let target = self.target(None);
        let opened = Arc::new(InspectContext::open(&published.compilation, &target).await?);
        *self.inspecting.lock().expect("not poisoned") = Some((key, opened.clone()));
        Ok(opened)
    }

    /// Whether the state store is there to open (a PostgreSQL store always is).
    fn state_exists(&self) -> bool {
        !matches!(&self.files.state, StateLocation::Sqlite(p) if !p.exists())
    }

    /// Where a read or an operation runs: the workspace's files, `environment` (`None`: main).
    pub fn target<'a>(&'a self, environment: Option<&'a str>) -> CommandTarget<'a> {
        self.files.target(self.adapter.as_deref(), environment)
    }

    /// The compilation reads answer from; API006 while the workspace cannot be compiled at
    /// all (its configuration cannot be read).
    pub fn snapshot(&self) -> Result<Arc<Published>, ApiError> {
        let published = self.live.snapshot();
        match &published.fatal {
            None => Ok(published),
            Some(d) => {
                let mut e = ApiError::new(
                    503,
                    codes::API_WORKSPACE_UNAVAILABLE,
                    format!("the workspace cannot be compiled: {}", d.message),
                );
                e.diagnostics.push(d.clone());
                Err(e)
            }
        }
    }
}
