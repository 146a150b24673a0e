//! `clean`: remove the local warehouse and the artifacts, and on request a SQLite state
//! (a PostgreSQL state is shared: never dropped).

use phlo_transform_compiler::ArtifactDir;
use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;
use phlo_transform_state::StateLocation;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// What `clean` removed, as paths.
#[derive(Debug, Serialize)]
pub struct CleanReport {
    pub removed: Vec<String>,
}

/// `clean [--all]` of the workspace at `root`: removes `warehouse`, the files of `artifacts`
/// and the compile cache that exist, and with `all` the state when it is a SQLite file (with
/// its `-wal`/`-shm` files). A PostgreSQL state is shared by every checkout and machine that
/// names it, so `clean` never drops it, `--all` included: the report lists only what was
/// removed. Stops at the first removal that fails.
pub fn clean(
    root: &Path,
    warehouse: &Path,
    artifacts: &ArtifactDir,
    state: &StateLocation,
    all: bool,
) -> Result<CleanReport, Diagnostic> {
    let evidence: Vec<PathBuf> = std::fs::read_dir(artifacts.path())
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                        n.starts_with(ArtifactDir::EVIDENCE_PREFIX) && n.ends_with(".json")
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    let artifacts = ArtifactDir::FILES
        .iter()
        .map(|name| artifacts.path().join(name))
        .chain(evidence)
        .chain([root.join(phlo_transform_compiler::cache::DIR)]);
    let sqlite_state = match (all, state) {
        (true, StateLocation::Sqlite(state)) => Some(state.as_path()),
        _ => None,
    };
    let mut targets = vec![warehouse.to_path_buf()];
    targets.extend(artifacts);
    if let Some(state) = sqlite_state {
        for suffix in ["", "-wal", "-shm"] {
            targets.push(PathBuf::from(format!("{}{suffix}", state.display())));
        }
    }
    let mut removed = Vec::new();
    for t in targets {
        let result = if t.is_dir() {
            std::fs::remove_dir_all(&t)
        } else if t.exists() {
            std::fs::remove_file(&t)
        } else {
            continue;
        };
        result.map_err(|e| {
            Diagnostic::error(
                codes::STATE_WRITE_FAILED,
                format!("cannot remove {}: {e}", t.display()),
            )
            .with_help("check permissions")
        })?;
        removed.push(t.display().to_string());
    }
    Ok(CleanReport { removed })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_removes_a_sqlite_state_and_never_a_postgresql_one() {
        // No tempfile here: the crate has no dev-dependencies to keep its build small.
        let dir = std::env::temp_dir().join(format!("phlo-clean-test-{}", std::process::id()));
        let warehouse = dir.join("warehouse");
        let artifacts = dir.join("transform");
        let state = artifacts.join("state.db");
        let fill = || {
            std::fs::create_dir_all(warehouse.join("x")).unwrap();
            std::fs::create_dir_all(&artifacts).unwrap();
            std::fs::write(artifacts.join("plan.json"), "{}").unwrap();
            std::fs::write(artifacts.join("environment_dev_12345678.json"), "{}").unwrap();
            std::fs::write(&state, "").unwrap();
        };
        let artifact_dir = ArtifactDir::new(&artifacts);
        let sqlite = StateLocation::Sqlite(state.clone());
        let postgres = StateLocation::Postgres("postgres://localhost/phlo".into());

        fill();
        let report = clean(&dir, &warehouse, &artifact_dir, &postgres, true).unwrap();
        assert_eq!(report.removed.len(), 3, "{:?}", report.removed);
        assert!(!warehouse.exists() && !artifacts.join("plan.json").exists());
        assert!(!artifacts.join("environment_dev_12345678.json").exists());
        assert!(
            state.exists(),
            "a PostgreSQL target never removes a SQLite file"
        );

        fill();
        clean(&dir, &warehouse, &artifact_dir, &sqlite, false).unwrap();
        assert!(state.exists(), "without --all the state stays");

        fill();
        let report = clean(&dir, &warehouse, &artifact_dir, &sqlite, true).unwrap();
        assert!(!state.exists());
        assert!(report.removed.contains(&state.display().to_string()));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
