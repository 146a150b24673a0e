//! From a configured target (`[adapter]`, `[adapters.<name>]`) to a running adapter, through
//! the target's [`Driver`](crate::Driver); everything after it holds a `dyn Adapter`.

use phlo_transform_compiler::Compilation;
use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;
use phlo_transform_project::AdapterTarget;
use std::path::Path;
use std::sync::Arc;

use crate::{Adapter, AdapterError, Purpose};

/// The help line for `e`, the error opening `target`: the engine's own when it has one (what
/// to check for a server that is down, a wrong password, a missing database or a locked
/// database file), else what to check for a warehouse that refused the connection (A008),
/// how to set an unset `password_env` variable, else where the target's settings are.
pub fn open_help(target: &AdapterTarget, e: &AdapterError) -> String {
    if let Some(help) = &e.help {
        return help.clone();
    }
    if e.code == codes::ADAPTER_UNAVAILABLE {
        return "check that the server is running and reachable at that address, and the \
                target's url, user and password_env"
            .to_string();
    }
    if let Err(unset) = target.password() {
        if let Some(help) = unset.help {
            return help;
        }
    }
    "check the adapter's settings in phlo.toml ([adapter] / [adapters.<name>])".to_string()
}

/// [`open`] with diagnostics: an error carries its help line ([`open_help`]); what the engine
/// opened without comes back as warnings ([`unreadable_relations`]).
pub async fn open_diagnosed(
    target: &AdapterTarget,
    root: &Path,
    c: &Compilation,
    purpose: Purpose,
) -> Result<(Arc<dyn Adapter>, Vec<Diagnostic>), Diagnostic> {
    let (engine, problems) = open(target, root, c, purpose).await.map_err(|e| {
        let help = open_help(target, &e);
        Diagnostic::error(e.code, e.message).with_help(help)
    })?;
    Ok((engine, unreadable_relations(problems)))
}

/// Warnings for what an engine opened without (a source it could not register): usable, but
/// the models reading those relations will fail.
pub fn unreadable_relations(problems: Vec<AdapterError>) -> Vec<Diagnostic> {
    problems
        .into_iter()
        .map(|p| {
            Diagnostic::warning(p.code, p.message)
                .with_help("models reading this relation will fail until it can be read")
        })
        .collect()
}

/// Opens `target` for workspace `c` rooted at `root` (the local engine's warehouse is
/// `root/.phlo/warehouse`) through its engine's [`Driver`]. Problems that do not stop the
/// engine from opening (a source the local engine cannot register) come back beside it; a
/// warehouse that cannot be reached is an error (A008).
pub async fn open(
    target: &AdapterTarget,
    root: &Path,
    c: &Compilation,
    purpose: Purpose,
) -> Result<(Arc<dyn Adapter>, Vec<AdapterError>), AdapterError> {
    crate::driver(target.kind())
        .open(target, root, c, purpose)
        .await
}
