//! The columns of named relations, read from the warehouse's catalog: PostgreSQL's
//! `pg_attribute` over one short-lived connection, DuckDB's `duckdb_columns()` on the database
//! file opened read-only (never created: a missing file is a warehouse that cannot be read).

use phlo_transform_project::{AdapterKind, AdapterTarget};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use crate::naming;

/// How long a warehouse may take to accept the connection before it counts as unreachable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Columns (name, declared type) of each of `names` (dotted source names) that exists in the
/// warehouse of `target`; absent names do not exist there. `Err` says why the catalog could
/// not be read.
pub fn columns(
    target: &AdapterTarget,
    root: &Path,
    names: &[String],
) -> Result<BTreeMap<String, Vec<(String, String)>>, String> {
    match target.kind() {
        AdapterKind::Postgres => postgres(target, names),
        AdapterKind::DuckDb => duckdb(target, root, names),
        other => Err(format!("no catalog reader for `{other}`")),
    }
}

/// `(schema, table)` of source `name` in an engine whose default schema is `engine_default`.
fn schema_table(name: &str, engine_default: &str) -> (String, String) {
    let parts = naming::source(name, engine_default).parts;
    (parts[0].clone(), parts[parts.len() - 1].clone())
}

fn postgres(
    target: &AdapterTarget,
    names: &[String],
) -> Result<BTreeMap<String, Vec<(String, String)>>, String> {
    use sqlx::{ConnectOptions, Row};
    let url = target.settings.url.clone().unwrap_or_default();
    let password = target.password().map_err(|d| d.message)?;
    let wanted: BTreeMap<(String, String), &String> = names
        .iter()
        .map(|n| (schema_table(n, "public"), n))
        .collect();
    let (schemas, tables): (Vec<String>, Vec<String>) = wanted.keys().cloned().unzip();
    // Compiling is synchronous and may run inside the command's runtime: a thread of its own.
    let rows = std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| e.to_string())?;
                runtime.block_on(async {
                    let mut options: sqlx::postgres::PgConnectOptions =
                        url.parse().map_err(|e: sqlx::Error| e.to_string())?;
                    if let Some(p) = &password {
                        options = options.password(p);
                    }
                    let mut conn = tokio::time::timeout(CONNECT_TIMEOUT, options.connect())
                        .await
                        .map_err(|_| format!("{url}: no answer within {CONNECT_TIMEOUT:?}"))?
                        .map_err(|e| crate::postgres::errors::connect_failed(e, &url).message)?;
                    let sql = "SELECT n.nspname, c.relname, a.attname, \
                                      format_type(a.atttypid, a.atttypmod) \
                               FROM pg_class c \
                               JOIN pg_namespace n ON n.oid = c.relnamespace \
                               JOIN pg_attribute a ON a.attrelid = c.oid \
                               WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f') \
                                 AND a.attnum > 0 AND NOT a.attisdropped \
                                 AND (n.nspname, c.relname) IN \
                                     (SELECT * FROM unnest($1::text[], $2::text[])) \
                               ORDER BY n.nspname, c.relname, a.attnum";
                    let rows = sqlx::query(sql)
                        .bind(&schemas)
                        .bind(&tables)
                        .fetch_all(&mut conn)
                        .await
                        .map_err(|e| e.to_string())?;
                    rows.iter()
                        .map(|r| {
                            Ok::<_, sqlx::Error>((
                                r.try_get::<String, _>(0)?,
                                r.try_get::<String, _>(1)?,
                                r.try_get::<String, _>(2)?,
                                r.try_get::<String, _>(3)?,
                            ))
                        })
                        .collect::<Result<Vec<_>, _>>()
                        .map_err(|e| e.to_string())
                })
            })
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })?;
    Ok(collect(&wanted, rows))
}

#[cfg(feature = "duckdb")]
fn duckdb(
    target: &AdapterTarget,
    root: &Path,
    names: &[String],
) -> Result<BTreeMap<String, Vec<(String, String)>>, String> {
    use duckdb::{AccessMode, Config, Connection};
    let path = root.join(target.settings.path.as_deref().unwrap_or_default());
    if !path.is_file() {
        return Err(format!("no DuckDB database file at {}", path.display()));
    }
    let shown = |e: duckdb::Error| format!("DuckDB database {}: {e}", path.display());
    let config = Config::default()
        .access_mode(AccessMode::ReadOnly)
        .map_err(shown)?;
    let conn = Connection::open_with_flags(&path, config).map_err(shown)?;
    let wanted: BTreeMap<(String, String), &String> =
        names.iter().map(|n| (schema_table(n, "main"), n)).collect();
    let pairs = wanted
        .keys()
        .map(|(s, t)| {
            format!(
                "({}, {})",
                crate::sqlgen::literal(s),
                crate::sqlgen::literal(t)
            )
        })
        .collect::<Vec<_>>()
        .join(", ");
    let sql = format!(
        "SELECT schema_name, table_name, column_name, data_type FROM duckdb_columns() \
         WHERE database_name = current_database() AND (schema_name, table_name) IN ({pairs}) \
         ORDER BY schema_name, table_name, column_index"
    );
    let mut stmt = conn.prepare(&sql).map_err(shown)?;
    let rows = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .map_err(shown)?
        .collect::<Result<Vec<(String, String, String, String)>, _>>()
        .map_err(shown)?;
    Ok(collect(&wanted, rows))
}

#[cfg(not(feature = "duckdb"))]
fn duckdb(
    _: &AdapterTarget,
    _: &Path,
    _: &[String],
) -> Result<BTreeMap<String, Vec<(String, String)>>, String> {
    Err("this build has no DuckDB (build with `--features duckdb`)".into())
}

/// Catalog rows `(schema, table, column, type)` by the source name they were asked as.
fn collect(
    wanted: &BTreeMap<(String, String), &String>,
    rows: Vec<(String, String, String, String)>,
) -> BTreeMap<String, Vec<(String, String)>> {
    let mut out: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for (schema, table, column, data_type) in rows {
        if let Some(name) = wanted.get(&(schema, table)) {
            out.entry((*name).clone())
                .or_default()
                .push((column, declared_type(&data_type)));
        }
    }
    out
}

/// A catalog type as a declared column type: lower case, without the precision of
/// timestamps and times (`timestamp(3) with time zone` → `timestamp with time zone`), and
/// `jsonb` as `json`.
fn declared_type(catalog: &str) -> String {
    let lower = catalog.to_lowercase();
    for base in ["timestamp", "time"] {
        if let Some(rest) = lower.strip_prefix(base) {
            if rest.is_empty() || rest.starts_with('(') || rest.starts_with(' ') {
                let zoned = rest.ends_with("with time zone");
                return match (base, zoned) {
                    (_, true) => format!("{base} with time zone"),
                    ("timestamp", false) => "timestamp".into(),
                    _ => "time".into(),
                };
            }
        }
    }
    match lower.as_str() {
        "jsonb" => "json".into(),
        _ => lower,
    }
}

#[cfg(test)]
mod tests {
    use super::declared_type;

    #[test]
    fn catalog_types_become_declared_types() {
        assert_eq!(
            declared_type("timestamp(3) with time zone"),
            "timestamp with time zone"
        );
        assert_eq!(declared_type("timestamp without time zone"), "timestamp");
        assert_eq!(
            declared_type("TIMESTAMP WITH TIME ZONE"),
            "timestamp with time zone"
        );
        assert_eq!(declared_type("time(6) without time zone"), "time");
        assert_eq!(declared_type("numeric(12,2)"), "numeric(12,2)");
        assert_eq!(declared_type("DECIMAL(12,2)"), "decimal(12,2)");
        assert_eq!(
            declared_type("character varying(25)"),
            "character varying(25)"
        );
        assert_eq!(declared_type("jsonb"), "json");
        assert_eq!(declared_type("VARCHAR"), "varchar");
    }
}
