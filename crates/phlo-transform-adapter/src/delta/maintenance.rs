//! Table maintenance (`[transform.maintenance]`) and reading back what phlo-transform wrote.
//!
//! Every so many data writes, the table is compacted (OPTIMIZE) and, with a retention, the
//! files no younger version needs are vacuumed. Maintenance commits carry `phlo.maintenance`
//! and no application transaction; the exactly-once checks look past them (and past another
//! writer's OPTIMIZE or VACUUM) because they read the `txn` actions and the last commit that
//! carries `phlo.generation`, never simply the latest commit.

use deltalake::kernel::transaction::CommitProperties;
use deltalake::DeltaTable;
use phlo_transform_project::MaintenanceSection;
use std::path::Path;

use crate::error::io_err;
use crate::AdapterError;

/// Commits searched, newest first, for the last phlo-transform data commit. Keep
/// `log_retention` longer than the time between two writes so it stays in the log.
const HISTORY_WINDOW: usize = 1000;

fn is_data_write(info: &deltalake::kernel::CommitInfo) -> bool {
    info.info.contains_key("phlo.generation")
}

/// `phlo.model_version` of the newest commit phlo-transform wrote data in.
pub async fn last_written_version(table: &DeltaTable) -> Result<Option<String>, AdapterError> {
    let history = table
        .history(Some(HISTORY_WINDOW))
        .await
        .map_err(|e| io_err(format!("reading the Delta history: {e}")))?;
    Ok(history.filter(is_data_write).find_map(|c| {
        c.info
            .get("phlo.model_version")?
            .as_str()
            .map(str::to_string)
    }))
}

/// Compacts (and vacuums) `table`, just written at `path`, when `compact_every` data writes
/// happened since the last compaction. Returns the table as maintenance left it.
pub async fn after_write(
    table: DeltaTable,
    path: &Path,
    settings: &MaintenanceSection,
    run_id: &str,
) -> Result<DeltaTable, AdapterError> {
    let Some(every) = settings.compact_every.filter(|n| *n > 0) else {
        return Ok(table);
    };
    let history = table
        .history(Some(HISTORY_WINDOW))
        .await
        .map_err(|e| io_err(format!("reading the Delta history: {e}")))?;
    let writes = history
        .take_while(|c| c.operation.as_deref() != Some("OPTIMIZE"))
        .filter(is_data_write)
        .count() as u64;
    if writes < every {
        return Ok(table);
    }
    let properties = |step: &str| {
        CommitProperties::default().with_metadata([
            ("phlo.maintenance".to_string(), serde_json::json!(step)),
            ("phlo.run_id".to_string(), serde_json::json!(run_id)),
        ])
    };
    let (table, _) = table
        .optimize()
        .with_commit_properties(properties("optimize"))
        .await
        .map_err(|e| io_err(format!("compacting {}: {e}", path.display())))?;
    let Some(retention) = settings.vacuum_retention else {
        return Ok(table);
    };
    let retention = chrono::Duration::from_std(retention)
        .map_err(|e| io_err(format!("vacuum retention: {e}")))?;
    let (table, _) = table
        .vacuum()
        .with_retention_period(retention)
        .with_enforce_retention_duration(false)
        .with_commit_properties(properties("vacuum"))
        .await
        .map_err(|e| io_err(format!("vacuuming {}: {e}", path.display())))?;
    Ok(table)
}
