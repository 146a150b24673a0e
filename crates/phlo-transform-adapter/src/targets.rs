//! From a configured target (`[adapter]`, `[adapters.<name>]`) to a running adapter. The one
//! place an engine is chosen; everything after it holds a `dyn Adapter`.

use phlo_transform_compiler::Compilation;
use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;
use phlo_transform_project::AdapterTarget;
use std::path::Path;
use std::sync::Arc;

use crate::{Adapter, AdapterError, LocalEngine, PostgresEngine};

/// What the adapter is opened for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Purpose {
    /// Naming and introspection only (`plan`, `list`, `inspect`): the local engine opens no
    /// tables.
    Plan,
    /// Executing models and tests, at most `jobs` at once.
    Run { jobs: usize },
}

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
/// `root/.phlo/warehouse`). Problems that do not stop the engine from opening (a source the
/// local engine cannot register) come back beside it; a warehouse that cannot be reached is
/// an error (A008).
pub async fn open(
    target: &AdapterTarget,
    root: &Path,
    c: &Compilation,
    purpose: Purpose,
) -> Result<(Arc<dyn Adapter>, Vec<AdapterError>), AdapterError> {
    let s = &target.settings;
    match target.kind() {
        "local" => {
            let warehouse = root.join(".phlo").join("warehouse");
            Ok(match purpose {
                Purpose::Plan => (
                    Arc::new(LocalEngine::unregistered(
                        &warehouse,
                        s.default_schema.as_deref(),
                    )),
                    Vec::new(),
                ),
                Purpose::Run { .. } => {
                    let (engine, problems) =
                        LocalEngine::open(&warehouse, c, s.default_schema.as_deref()).await;
                    (Arc::new(engine), problems)
                }
            })
        }
        "postgres" => {
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
        #[cfg(feature = "duckdb")]
        "duckdb" => {
            let path = root.join(s.path.as_deref().unwrap_or("warehouse.duckdb"));
            // Planning never creates the database file: without one, nothing exists yet.
            let engine = if purpose == Purpose::Plan && !path.exists() {
                crate::DuckDbEngine::empty(s.default_schema.as_deref())?
            } else {
                crate::DuckDbEngine::open(&path, s.default_schema.as_deref())?
            };
            Ok((Arc::new(engine), Vec::new()))
        }
        #[cfg(not(feature = "duckdb"))]
        "duckdb" => Err(AdapterError::new(
            codes::UNKNOWN_ADAPTER,
            format!(
                "adapter `{}`: this build has no DuckDB; build with `--features duckdb` \
                 after `export DUCKDB_LIB_DIR=$(scripts/duckdb.sh)` (see docs/adapters.md)",
                target.name
            ),
        )),
        "trino" => {
            let settings = crate::trino::settings(target, root)?;
            // View models live in the views catalog: the engine names them there.
            let views = c
                .models
                .iter()
                .filter(|m| m.materialization == phlo_transform_project::Materialization::View)
                .map(|m| m.name.as_str().to_string())
                .collect();
            let engine = crate::trino::TrinoEngine::connect(settings, views).await?;
            Ok((Arc::new(engine), Vec::new()))
        }
        other => Err(AdapterError::new(
            codes::UNKNOWN_ADAPTER,
            format!(
                "adapter `{}`: type `{other}` is not available in this build",
                target.name
            ),
        )),
    }
}
