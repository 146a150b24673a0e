//! Warehouse sources on Trino: a relation with three parts (`tpch.tiny.lineitem`) that no model
//! or declared source names is `catalog.schema.table` in Trino. Before compiling, its columns
//! are read from the catalog's `information_schema` (no query over the data runs) and it
//! becomes a source with declared columns, so the compiler types the models reading it. Iceberg
//! tables of the catalog on Nessie become Iceberg sources at their current metadata file
//! instead (typed from it, identified by snapshot).

use datafusion::sql::sqlparser::ast::{visit_relations, ObjectNamePart};
use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::parser::Parser;
use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;
use phlo_transform_lakehouse::iceberg_state::local_path;
use phlo_transform_lakehouse::nessie::{Content, Nessie};
use phlo_transform_project::{AdapterKind, AdapterTarget, SourceDecl, SourceFormat, Workspace};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::ControlFlow;
use std::path::Path;
use std::time::Duration;

use super::client::{Trino, TrinoConfig, TrinoError};
use crate::sqlgen::{ident, literal};

/// Adds to `ws.sources` the three-part relations its models and tests read that Trino has, typed from
/// Trino's metadata. Runs before compiling; a Trino that cannot be reached while models need
/// it is A008.
pub fn add_warehouse_sources(
    ws: &mut Workspace,
    target: &AdapterTarget,
    root: &Path,
) -> Result<(), Diagnostic> {
    let known: BTreeSet<&str> = ws
        .models
        .iter()
        .map(|m| m.name.as_str())
        .chain(ws.sources.iter().map(|s| s.name.as_str()))
        .collect();
    let wanted: Vec<String> = three_part_relations(ws)
        .into_iter()
        .filter(|n| !known.contains(n.as_str()))
        .collect();
    if wanted.is_empty() {
        return Ok(());
    }
    let settings =
        super::settings(target, root).map_err(|e| Diagnostic::error(e.code, e.message))?;
    let mut config = TrinoConfig::new(settings.url.clone(), settings.user.clone());
    config.password = settings.password.clone();
    let found = std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| TrinoError::internal(e.to_string()))?;
                let client = Trino::new(config)?;
                runtime.block_on(async {
                    let mut found = warehouse_sources(&client, &wanted).await?;
                    pin_iceberg_tables(&settings, &mut found).await?;
                    Ok::<_, TrinoError>(found)
                })
            })
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
    .map_err(|e| {
        Diagnostic::error(
            codes::ADAPTER_UNAVAILABLE,
            format!(
                "Trino at {} cannot type the warehouse relations the models read ({}): {e}",
                settings.url,
                wanted.join(", ")
            ),
        )
        .with_help("start Trino (scripts/services.sh up) or check [adapter] url")
    })?;
    ws.sources.extend(found);
    Ok(())
}

/// Turns the sources that are Iceberg tables of the catalog on Nessie into Iceberg sources at
/// their current metadata file (found through Nessie's contents API, read under `local_root`):
/// the compiler then types them from the Iceberg schema and identifies their contents by
/// snapshot and schema id, so a new snapshot of a source rebuilds the models reading it
/// (`source_change`). Without `[adapter.nessie]` and `local_root` they stay typed from
/// Trino's metadata, and changes to their data are not seen by `plan`.
async fn pin_iceberg_tables(
    settings: &super::TrinoSettings,
    sources: &mut [SourceDecl],
) -> Result<(), TrinoError> {
    let (Some((url, reference)), Some(root)) = (&settings.nessie, &settings.local_root) else {
        return Ok(());
    };
    let nessie = Nessie::new(url.clone(), Duration::from_secs(10))
        .map_err(|e| TrinoError::internal(format!("Nessie at {url}: {e}")))?;
    for source in sources.iter_mut() {
        let [catalog, schema, table] = source.name.split('.').collect::<Vec<_>>()[..] else {
            continue;
        };
        if catalog != settings.catalog {
            continue;
        }
        let content = nessie
            .content(reference, &[schema, table])
            .await
            .map_err(|e| TrinoError::internal(format!("Nessie at {url}: {e}")))?;
        if let Some(Content::IcebergTable {
            metadata_location, ..
        }) = content
        {
            let path = local_path(&metadata_location, Some(root))
                .map_err(|e| TrinoError::internal(e.to_string()))?;
            source.format = SourceFormat::Iceberg;
            source.path = path;
            source.columns.clear();
        }
    }
    Ok(())
}

/// Every relation with exactly three parts in the models' and the data tests' SQL, lower-cased
/// unless quoted (a test may be the only reader of a warehouse table). Files that do not
/// parse are left to the compiler to report.
fn three_part_relations(ws: &Workspace) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let texts = ws.models.iter().map(|m| &m.text);
    for text in texts.chain(ws.tests.iter().map(|t| &t.text)) {
        let Ok(statements) = Parser::parse_sql(&GenericDialect {}, text) else {
            continue;
        };
        let _ = visit_relations(&statements, |name| {
            let parts: Vec<String> = name
                .0
                .iter()
                .filter_map(|p| match p {
                    ObjectNamePart::Identifier(i) if i.quote_style.is_some() => {
                        Some(i.value.clone())
                    }
                    ObjectNamePart::Identifier(i) => Some(i.value.to_lowercase()),
                    _ => None,
                })
                .collect();
            if parts.len() == 3 {
                names.insert(parts.join("."));
            }
            ControlFlow::<()>::Continue(())
        });
    }
    names
}

/// The tables among `names` (dotted, three parts) that exist in Trino, as sources typed from
/// Trino's metadata; names Trino does not know are left out (the compiler reports them as
/// unresolved relations).
pub async fn warehouse_sources(
    client: &Trino,
    names: &[String],
) -> Result<Vec<SourceDecl>, TrinoError> {
    let mut by_catalog: BTreeMap<&str, Vec<(&str, &str)>> = BTreeMap::new();
    for name in names {
        if let [catalog, schema, table] = name.split('.').collect::<Vec<_>>().as_slice() {
            by_catalog.entry(catalog).or_default().push((schema, table));
        }
    }
    let mut found: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for (catalog, tables) in by_catalog {
        let wanted = tables
            .iter()
            .map(|(s, t)| format!("({}, {})", literal(s), literal(t)))
            .collect::<Vec<_>>()
            .join(", ");
        let distinct = |names: Vec<&str>| {
            names
                .into_iter()
                .map(literal)
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect::<Vec<_>>()
                .join(", ")
        };
        // Plain IN lists are pushed into information_schema; the pair condition alone makes
        // Trino list every table of the catalog.
        let schemas = distinct(tables.iter().map(|t| t.0).collect());
        let names = distinct(tables.iter().map(|t| t.1).collect());
        let sql = format!(
            "SELECT table_schema, table_name, column_name, data_type FROM {}.information_schema.columns \
             WHERE table_schema IN ({schemas}) AND table_name IN ({names}) \
             AND (table_schema, table_name) IN ({wanted}) ORDER BY table_schema, table_name, ordinal_position",
            ident(catalog)
        );
        let result = match client.execute(&sql).await {
            Ok(result) => result,
            // An unknown catalog: none of its names are warehouse tables.
            Err(e) if e.name() == "CATALOG_NOT_FOUND" => continue,
            Err(e) => return Err(e),
        };
        for row in &result.rows {
            let text = |i: usize| {
                row.get(i)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned()
            };
            found
                .entry(format!("{catalog}.{}.{}", text(0), text(1)))
                .or_default()
                .push((text(2), declared_type(&text(3))));
        }
    }
    Ok(found
        .into_iter()
        .map(|(name, columns)| SourceDecl::in_warehouse(AdapterKind::Trino, name, columns))
        .collect())
}

/// A Trino type name as a declared column type: `timestamp(3) with time zone` →
/// `timestamp with time zone` (precision does not change the type checked against).
fn declared_type(trino: &str) -> String {
    let lower = trino.to_lowercase();
    if lower.starts_with("timestamp") {
        return if lower.ends_with("with time zone") {
            "timestamp with time zone".into()
        } else {
            "timestamp".into()
        };
    }
    lower
}

#[cfg(test)]
mod tests {
    use super::{declared_type, three_part_relations};

    /// A data test may be the only reader of a Trino table (issue 13).
    #[test]
    fn data_tests_are_searched_for_three_part_relations() {
        let dir = tempfile::tempdir().unwrap();
        let write = |path: &str, text: &str| {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        write("phlo.toml", "");
        write("transforms/x/a.sql", "select * from tpch.tiny.nation\n");
        write(
            "tests/regions.sql",
            "select * from tpch.tiny.region where r_regionkey < 0\n",
        );
        let ws = phlo_transform_project::Workspace::load(dir.path()).unwrap();
        let names: Vec<String> = three_part_relations(&ws).into_iter().collect();
        assert_eq!(names, ["tpch.tiny.nation", "tpch.tiny.region"]);
    }

    #[test]
    fn timestamp_precision_is_dropped() {
        assert_eq!(
            declared_type("timestamp(3) with time zone"),
            "timestamp with time zone"
        );
        assert_eq!(declared_type("timestamp(6)"), "timestamp");
        assert_eq!(declared_type("decimal(12,2)"), "decimal(12,2)");
        assert_eq!(declared_type("varchar(25)"), "varchar(25)");
    }
}
