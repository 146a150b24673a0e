//! What every request is answered from: the live workspace, the negotiated position
//! encoding and the commands the caller supplied.

use phlo_transform_live::LiveWorkspace;

use crate::commands::Commands;
use crate::convert::Encoding;

pub(crate) struct Context {
    pub(crate) live: LiveWorkspace,
    pub(crate) encoding: Encoding,
    pub(crate) commands: Box<dyn Commands>,
}

impl Context {
    /// The workspace-relative path of a file URI inside the workspace.
    pub(crate) fn relative(&self, uri: &lsp_types::Url) -> Option<String> {
        self.live.relative(&uri.to_file_path().ok()?)
    }
}
