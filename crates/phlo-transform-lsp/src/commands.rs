//! The commands the server runs for the client (`workspace/executeCommand`). A leaf: the
//! session and the handlers import it, it imports none of them.

use phlo_transform_compiler::Compilation;
use phlo_transform_core::Diagnostic;
use std::path::Path;

/// The `workspace/executeCommand` command that previews the plan of the model in a file.
pub const PLAN_COMMAND: &str = "phlo-transform.plan";

/// What the server runs for the client through `workspace/executeCommand`. The caller
/// supplies it: planning reads the state and the warehouse, which this crate does not reach.
pub trait Commands {
    /// The plan preview of `model` alone in the workspace at `root` compiled as `c`: the
    /// document `plan -s <model> --json` prints, the plan not stored.
    fn plan(
        &self,
        root: &Path,
        c: &Compilation,
        model: &str,
    ) -> Result<serde_json::Value, Vec<Diagnostic>>;
}
