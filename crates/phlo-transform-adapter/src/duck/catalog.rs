//! What the DuckDB database holds — schemas, tables and views with their recorded build
//! strategies — read from the catalog once per engine and then kept by the engine's own
//! writes. DuckDB lets one process open a database file at a time (a second `run` or the
//! `duckdb` CLI cannot), so while the engine is open nothing else changes it, and a model's
//! write need not read the catalog again.
//!
//! Reading it per model was the adapter's main cost: `duckdb_tables()` and `duckdb_views()`
//! produce every relation of the database (with its SQL text) before any filter applies, so
//! each lookup grew with the database (about 11 ms at 1,000 models in a debug build), and
//! `duckdb_columns()` binds every view. Columns are therefore not part of introspection here;
//! an incremental write reads its one table's columns with `pragma_table_info`.

use duckdb::Connection;
use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use super::error::failed;
use crate::sqlgen;
use crate::{AdapterError, Relation, RelationInfo, RelationKind};

/// DuckDB's default schema.
pub(super) const MAIN: &str = "main";

/// The schema and table of `r`, in the default schema when it names none.
pub(super) fn schema_and_table(r: &Relation) -> (&str, &str) {
    sqlgen::schema_and_table(r, MAIN)
}

#[derive(Default)]
pub struct Catalog {
    /// `None` until read, and again after a write whose outcome is unknown.
    contents: Mutex<Option<Contents>>,
    /// Held while a schema is looked up and created; see [`Catalog::ensure_schema`].
    creating_schema: Mutex<()>,
}

struct Contents {
    schemas: HashSet<String>,
    relations: HashMap<(String, String), RelationInfo>,
}

fn key(relation: &Relation) -> (String, String) {
    let (schema, table) = schema_and_table(relation);
    (schema.to_string(), table.to_string())
}

impl Catalog {
    /// Runs `f` on the contents, reading them through `conn` first when they are not known.
    fn with<T>(
        &self,
        conn: &Connection,
        f: impl FnOnce(&mut Contents) -> T,
    ) -> Result<T, AdapterError> {
        let mut guard = self.contents.lock().expect("not poisoned");
        if guard.is_none() {
            *guard = Some(read(conn)?);
        }
        Ok(f(guard.as_mut().expect("just read")))
    }

    /// What exists at each of `relations` (temporary tables excluded).
    pub fn lookup(
        &self,
        conn: &Connection,
        relations: &[Relation],
    ) -> Result<Vec<Option<RelationInfo>>, AdapterError> {
        self.with(conn, |c| {
            relations
                .iter()
                .map(|r| c.relations.get(&key(r)).cloned())
                .collect()
        })
    }

    /// Makes sure `schema` exists, running `create` (an autocommitted `CREATE SCHEMA IF NOT
    /// EXISTS`) when the catalog does not hold it, one caller at a time. Two of the engine's
    /// connections creating the same schema at once make DuckDB refuse the later one with
    /// "Catalog write-write conflict on create" for as long as the earlier one has not
    /// committed, however often it is repeated; under load that window is long enough to fail
    /// a model (the SPEC 64 test's x.a and x.d, both in `x`). Serialised, the second caller
    /// finds the schema the first one committed and creates nothing.
    pub fn ensure_schema(
        &self,
        conn: &Connection,
        schema: &str,
        create: impl FnOnce() -> Result<(), AdapterError>,
    ) -> Result<(), AdapterError> {
        let _one_at_a_time = self.creating_schema.lock().expect("not poisoned");
        if self.with(conn, |c| c.schemas.contains(schema))? {
            return Ok(());
        }
        create()?;
        if let Some(c) = self.contents.lock().expect("not poisoned").as_mut() {
            c.schemas.insert(schema.to_string());
        }
        Ok(())
    }

    /// Records what a committed write left at `relation`.
    pub fn wrote(&self, relation: &Relation, now: Option<RelationInfo>) {
        if let Some(c) = self.contents.lock().expect("not poisoned").as_mut() {
            match now {
                Some(info) => c.relations.insert(key(relation), info),
                None => c.relations.remove(&key(relation)),
            };
        }
    }

    /// Forgets everything after a write that failed (it may or may not have committed): the
    /// next lookup reads the catalog again.
    pub fn forget(&self) {
        *self.contents.lock().expect("not poisoned") = None;
    }
}

/// A table that records `label` as its strategy: what a full build leaves.
pub fn table(label: String) -> Option<RelationInfo> {
    Some(RelationInfo {
        kind: RelationKind::Table,
        columns: None,
        strategy: Some(label),
    })
}

/// A view: what `create_view` leaves.
pub fn view() -> Option<RelationInfo> {
    Some(RelationInfo {
        kind: RelationKind::View,
        columns: None,
        strategy: None,
    })
}

/// Every schema, table and view of the database file.
fn read(conn: &Connection) -> Result<Contents, AdapterError> {
    let sql = "SELECT schema_name FROM duckdb_schemas() WHERE database_name = current_database()";
    let mut stmt = conn.prepare(sql).map_err(|e| failed(e, sql))?;
    let schemas = stmt
        .query_map([], |r| r.get::<_, String>(0))
        .map_err(|e| failed(e, sql))?
        .collect::<Result<HashSet<_>, _>>()
        .map_err(|e| failed(e, sql))?;
    let sql = "SELECT schema_name, table_name, 'table' AS kind, comment FROM duckdb_tables()
                   WHERE database_name = current_database()
               UNION ALL
               SELECT schema_name, view_name, 'view', comment FROM duckdb_views()
                   WHERE database_name = current_database() AND NOT internal";
    let mut stmt = conn.prepare(sql).map_err(|e| failed(e, sql))?;
    let rows = stmt
        .query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, Option<String>>(3)?,
            ))
        })
        .map_err(|e| failed(e, sql))?;
    let mut relations = HashMap::new();
    for row in rows {
        let (schema, table, kind, comment) = row.map_err(|e| failed(e, sql))?;
        let kind = if kind == "view" {
            RelationKind::View
        } else {
            RelationKind::Table
        };
        relations.insert(
            (schema, table),
            RelationInfo {
                kind,
                columns: None,
                strategy: sqlgen::recorded_strategy(comment),
            },
        );
    }
    Ok(Contents { schemas, relations })
}

/// The column names of the table `qualified` (a dotted, quoted name such as `"s"."t"` or
/// `temp.main.phlo_batch`), in order: one catalog lookup that binds no view.
pub fn table_columns(conn: &Connection, qualified: &str) -> Result<Vec<String>, AdapterError> {
    let sql = format!(
        "SELECT name FROM pragma_table_info({}) ORDER BY cid",
        sqlgen::literal(qualified)
    );
    let mut stmt = conn.prepare(&sql).map_err(|e| failed(e, &sql))?;
    let names = stmt
        .query_map([], |r| r.get::<_, String>(0))
        .map_err(|e| failed(e, &sql))?
        .collect::<Result<_, _>>()
        .map_err(|e| failed(e, &sql));
    names
}
