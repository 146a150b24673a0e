//! The SQL a warehouse adapter generates around a model's query (ARCHITECTURE decision 4):
//! the model's own AST printed with physical, double-quoted names, wrapped in CTAS, views,
//! MERGE, DELETE + INSERT. PostgreSQL, DuckDB and Trino share this standard form; where they
//! differ the caller passes the difference in.
//!
//! Incremental statements keep the local engine's meaning (see `delta::change`): the model's
//! query defines the whole table, so an incremental write and a full rebuild give the same
//! rows. The query runs once into a batch relation; the statements compare it with the table.

use datafusion::sql::sqlparser::ast::Query;
use phlo_transform_project::IncrementalStrategy;

use crate::{MaterializeJob, Relation, RelationKind};

/// The table comment recording a table's build strategy: `phlo.strategy=<label>`.
pub const STRATEGY_COMMENT: &str = "phlo.strategy=";

/// Suffix of the relation a table is built into before it is swapped in.
pub(crate) const NEW_SUFFIX: &str = "__phlo_new";

/// The temporary table an incremental write's batch is held in.
pub const BATCH: &str = "\"phlo_batch\"";

/// The strategy label a table comment records, if it records one.
pub fn recorded_strategy(comment: Option<String>) -> Option<String> {
    comment.and_then(|c| c.strip_prefix(STRATEGY_COMMENT).map(str::to_string))
}

/// The last two parts of `r`, schema and table (a database part before them is the
/// connection's); a one-part relation lives in `default_schema`.
pub fn schema_and_table<'a>(r: &'a Relation, default_schema: &'a str) -> (&'a str, &'a str) {
    match r.parts.as_slice() {
        [.., schema, table] => (schema.as_str(), table.as_str()),
        [table] => (default_schema, table.as_str()),
        [] => (default_schema, ""),
    }
}

/// `DROP TABLE` / `DROP VIEW` of what exists at `target`, so that a new relation can take
/// its name; with `cascade` the views on it go too (the caller re-creates them).
pub fn drop_existing(
    target: &Relation,
    existing: Option<RelationKind>,
    cascade: bool,
) -> Option<String> {
    let kind = match existing? {
        RelationKind::Table => "TABLE",
        RelationKind::View => "VIEW",
    };
    let cascade = if cascade { " CASCADE" } else { "" };
    Some(format!("DROP {kind} {}{cascade}", target.quoted()))
}

/// A full build of `job`'s table, to run in one transaction: the query into
/// `<table>__phlo_new`, NOT NULL on the key and not-null columns, `drop` (what
/// [`drop_existing`] gave for the relation there now), the rename into place and the strategy
/// comment. Readers see the old table or the new one, never a half-built one.
pub fn full_build(job: &MaterializeJob, default_schema: &str, drop: Option<String>) -> Vec<String> {
    let target = &job.relation;
    let (schema, table) = schema_and_table(target, default_schema);
    let new = Relation::new([schema.to_string(), format!("{table}{NEW_SUFFIX}")]);
    let mut out = vec![
        format!("DROP TABLE IF EXISTS {}", new.quoted()),
        format!("CREATE TABLE {} AS {}", new.quoted(), job.query),
    ];
    let mut not_null: Vec<&String> = job.table.not_null.iter().collect();
    not_null.extend(&job.table.key);
    not_null.sort();
    not_null.dedup();
    for c in not_null {
        out.push(format!(
            "ALTER TABLE {} ALTER COLUMN {} SET NOT NULL",
            new.quoted(),
            ident(c)
        ));
    }
    out.extend(drop);
    out.push(format!(
        "ALTER TABLE {} RENAME TO {}",
        new.quoted(),
        ident(table)
    ));
    out.push(format!(
        "COMMENT ON TABLE {} IS {}",
        target.quoted(),
        literal(&format!("{STRATEGY_COMMENT}{}", job.table.label()))
    ));
    out
}

/// The query an incremental write's batch holds: the model's query, for `window=` only the
/// rows past the table's watermark.
pub fn batch_query(job: &MaterializeJob, strategy: &IncrementalStrategy) -> String {
    let query = job.query.to_string();
    match strategy {
        IncrementalStrategy::Window { column } => past_watermark(&query, &job.relation, column),
        _ => query,
    }
}

/// The statements `inspect --sql` shows for an incremental write against an existing table
/// with the model's compiled columns: `batch` (the engine's statement creating [`BATCH`]),
/// then [`incremental`].
pub fn incremental_preview(
    job: &MaterializeJob,
    strategy: &IncrementalStrategy,
    batch: String,
) -> Vec<String> {
    let mut out = vec![batch];
    out.extend(incremental(
        strategy,
        &job.table.key,
        &job.relation,
        BATCH,
        &job.columns,
    ));
    out
}

/// What an incremental write did, for the run report (`MaterializeOutcome::write`): `merge`,
/// `replace partitions`, `append` or, when an append found nothing new, `no change`.
pub fn write_kind(
    strategy: &IncrementalStrategy,
    keyed: bool,
    rows_before: u64,
    rows_after: u64,
) -> &'static str {
    match strategy {
        IncrementalStrategy::Key { .. } => "merge",
        IncrementalStrategy::Partition { .. } => "replace partitions",
        IncrementalStrategy::Window { .. } if keyed => "merge",
        _ if rows_after == rows_before => "no change",
        _ => "append",
    }
}

/// `SELECT count(*)` over `query`: the rows a data test's query finds ([`Adapter::execute`]).
///
/// [`Adapter::execute`]: crate::Adapter::execute
pub fn count_rows(query: &Query) -> String {
    format!("SELECT count(*) FROM ({query}) AS q")
}

/// A double-quoted identifier.
pub fn ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// A single-quoted string literal.
pub fn literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// `{prefix}"a", {prefix}"b"`: `columns` quoted, each after `prefix` (a table alias and dot).
pub fn list(columns: &[String], prefix: &str) -> String {
    columns
        .iter()
        .map(|c| format!("{prefix}{}", ident(c)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `a."x" IS NOT DISTINCT FROM b."x" AND …`: null-safe equality on `columns`.
pub fn same(columns: &[String], a: &str, b: &str) -> String {
    if columns.is_empty() {
        return "TRUE".into();
    }
    columns
        .iter()
        .map(|c| format!("{a}.{} IS NOT DISTINCT FROM {b}.{}", ident(c), ident(c)))
        .collect::<Vec<_>>()
        .join(" AND ")
}

/// The rows of `from` (aliased `b`) without an identical row in `table`.
fn new_rows(from: &str, table: &str, columns: &[String]) -> String {
    format!(
        "SELECT {} FROM {from} AS b WHERE NOT EXISTS (SELECT 1 FROM {table} AS t WHERE {})",
        list(columns, "b."),
        same(columns, "t", "b")
    )
}

/// The statements that write `batch` (a relation holding the query's rows, with the table's
/// columns) into the existing `table` with `strategy`. `key` is the merge key of `window=`
/// models (`@key`); `window` batches hold only the rows past the watermark already.
pub fn incremental(
    strategy: &IncrementalStrategy,
    key: &[String],
    table: &Relation,
    batch: &str,
    columns: &[String],
) -> Vec<String> {
    let t = table.quoted();
    let insert_new = |from: &str| {
        format!(
            "INSERT INTO {t} ({}) {}",
            list(columns, ""),
            new_rows(from, &t, columns)
        )
    };
    match strategy {
        IncrementalStrategy::Append => vec![insert_new(batch)],
        IncrementalStrategy::Key { columns: key } => vec![merge(&t, batch, columns, key)],
        IncrementalStrategy::Window { .. } if !key.is_empty() => {
            vec![merge(&t, batch, columns, key)]
        }
        IncrementalStrategy::Window { .. } => vec![insert_new(batch)],
        IncrementalStrategy::Partition { columns: parts } => {
            let affected = format!(
                "SELECT DISTINCT {p} FROM ({new}) AS n UNION SELECT DISTINCT {p} FROM ({gone}) AS g",
                p = list(parts, ""),
                new = new_rows(batch, &t, columns),
                gone = format_args!(
                    "SELECT {} FROM {t} AS b WHERE NOT EXISTS (SELECT 1 FROM {batch} AS t WHERE {})",
                    list(columns, "b."),
                    same(columns, "t", "b")
                ),
            );
            vec![
                format!("CREATE TEMP TABLE \"phlo_affected\" AS {affected}"),
                format!(
                    "DELETE FROM {t} AS t WHERE EXISTS (SELECT 1 FROM \"phlo_affected\" AS a WHERE {})",
                    same(parts, "t", "a")
                ),
                format!(
                    "INSERT INTO {t} ({}) SELECT {} FROM {batch} AS b WHERE EXISTS (SELECT 1 FROM \"phlo_affected\" AS a WHERE {})",
                    list(columns, ""),
                    list(columns, "b."),
                    same(parts, "b", "a")
                ),
                "DROP TABLE \"phlo_affected\"".into(),
            ]
        }
        // `full` rebuilds; the caller never asks for it here.
        IncrementalStrategy::Full => Vec::new(),
    }
}

/// MERGE of the batch's rows new to the table, on `key`.
fn merge(table: &str, batch: &str, columns: &[String], key: &[String]) -> String {
    let on = key
        .iter()
        .map(|k| format!("t.{} = s.{}", ident(k), ident(k)))
        .collect::<Vec<_>>()
        .join(" AND ");
    let update: Vec<String> = columns
        .iter()
        .filter(|c| !key.contains(c))
        .map(|c| format!("{} = s.{}", ident(c), ident(c)))
        .collect();
    let matched = if update.is_empty() {
        String::new()
    } else {
        format!(" WHEN MATCHED THEN UPDATE SET {}", update.join(", "))
    };
    format!(
        "MERGE INTO {table} AS t USING ({}) AS s ON {on}{matched} WHEN NOT MATCHED THEN INSERT ({}) VALUES ({})",
        new_rows(batch, table, columns),
        list(columns, ""),
        list(columns, "s.")
    )
}

/// The query restricted to the rows past the table's watermark (`window=column`).
pub fn past_watermark(query: &str, table: &Relation, column: &str) -> String {
    let c = ident(column);
    format!(
        "SELECT * FROM ({query}) AS q WHERE q.{c} > (SELECT max({c}) FROM {t}) OR (SELECT max({c}) FROM {t}) IS NULL",
        t = table.quoted()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cols(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn append_inserts_only_rows_new_to_the_table() {
        let t = Relation::new(["s", "t"]);
        let sql = incremental(
            &IncrementalStrategy::Append,
            &[],
            &t,
            "\"phlo_batch\"",
            &cols(&["id", "v"]),
        );
        assert_eq!(
            sql,
            vec![
                "INSERT INTO \"s\".\"t\" (\"id\", \"v\") SELECT b.\"id\", b.\"v\" FROM \"phlo_batch\" AS b WHERE NOT EXISTS (SELECT 1 FROM \"s\".\"t\" AS t WHERE t.\"id\" IS NOT DISTINCT FROM b.\"id\" AND t.\"v\" IS NOT DISTINCT FROM b.\"v\")"
            ]
        );
    }

    #[test]
    fn key_merges_and_updates_only_non_key_columns() {
        let t = Relation::new(["s", "t"]);
        let sql = incremental(
            &IncrementalStrategy::Key {
                columns: cols(&["id"]),
            },
            &[],
            &t,
            "b",
            &cols(&["id", "v"]),
        );
        assert!(sql[0].starts_with("MERGE INTO \"s\".\"t\" AS t USING ("));
        assert!(sql[0].contains("ON t.\"id\" = s.\"id\" WHEN MATCHED THEN UPDATE SET \"v\" = s.\"v\" WHEN NOT MATCHED THEN INSERT (\"id\", \"v\") VALUES (s.\"id\", s.\"v\")"));
    }

    #[test]
    fn identifiers_and_literals_escape_their_quotes() {
        assert_eq!(ident("a\"b"), "\"a\"\"b\"");
        assert_eq!(literal("it's"), "'it''s'");
    }
}
