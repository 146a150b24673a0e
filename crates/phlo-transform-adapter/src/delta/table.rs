//! Opening a Delta table folder: a leaf of `delta`, so that maintenance (which opens the table
//! it compacts) and the writer both use it without importing each other.

use deltalake::DeltaTable;
use phlo_transform_lakehouse::delta_log::has_commit;
use std::path::Path;

use crate::error::io_err;
use crate::AdapterError;

/// Opens the table at `path`; `None` when there is none (no `_delta_log`, or one without a
/// commit: [`has_commit`]).
pub async fn open(path: &Path) -> Result<Option<DeltaTable>, AdapterError> {
    if !has_commit(path) {
        return Ok(None);
    }
    let url =
        deltalake::ensure_table_uri(path.to_string_lossy()).map_err(|e| io_err(e.to_string()))?;
    deltalake::open_table(url)
        .await
        .map(Some)
        .map_err(|e| io_err(format!("opening {}: {e}", path.display())))
}
