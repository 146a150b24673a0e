//! `clean`: remove the local warehouse and the artifacts, and on request a SQLite state
//! (a PostgreSQL state is shared: never dropped).

use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// What `clean` removed, as paths.
#[derive(Debug, Serialize)]
pub struct CleanReport {
    pub removed: Vec<String>,
}

/// Removes `warehouse`, each of `artifacts` that exists, and the SQLite database
/// `sqlite_state` with its `-wal`/`-shm` files; stops at the first removal that fails.
pub fn clean(
    warehouse: &Path,
    artifacts: impl IntoIterator<Item = PathBuf>,
    sqlite_state: Option<&Path>,
) -> Result<CleanReport, Diagnostic> {
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
