//! The output identity of an Iceberg table, spelled once (a leaf module: the engine and
//! branches both use it).

/// The output identity of an Iceberg table (SPEC §39): its current snapshot (`None` or a
/// negative id: no snapshot yet) and schema. Any write, through phlo-transform or not, moves
/// the snapshot. One spelling for the engine (read from the metadata file) and for branches
/// (read from Nessie's contents), since environments compare the two.
pub(crate) fn iceberg_identity(snapshot_id: Option<i64>, schema_id: i64) -> String {
    let snapshot = snapshot_id
        .filter(|id| *id >= 0)
        .map_or_else(|| "none".to_owned(), |id| id.to_string());
    format!("iceberg:snapshot:{snapshot},schema:{schema_id}")
}
