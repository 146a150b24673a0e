//! What every handler answers from: the workspace's files, the target, the one live
//! compilation and the async runtime the library's calls run on. A leaf: handlers and
//! operations import it, it imports none of them.

use crate::api_error::ApiError;
use phlo_transform_core::diagnostic::codes;
use phlo_transform_exec::target::{CommandTarget, WorkspaceFiles};
use phlo_transform_live::{LiveWorkspace, Published};
use std::sync::Arc;

pub struct Context {
    pub files: WorkspaceFiles,
    /// `--adapter`; `None`: the workspace's `[adapter]`.
    pub adapter: Option<String>,
    pub live: LiveWorkspace,
    /// The runtime of the command line's process: request threads `block_on` it.
    pub runtime: tokio::runtime::Handle,
}

impl Context {
    /// Where a read or an operation runs: the workspace's files, `environment` (`None`: main).
    pub fn target<'a>(&'a self, environment: Option<&'a str>) -> CommandTarget<'a> {
        CommandTarget {
            root: &self.files.root,
            warehouse: &self.files.warehouse,
            artifacts: &self.files.artifacts,
            state: &self.files.state,
            adapter: self.adapter.as_deref(),
            reference: environment,
        }
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
