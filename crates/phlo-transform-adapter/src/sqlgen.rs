//! The SQL a warehouse adapter generates around a model's query (ARCHITECTURE decision 4):
//! the model's own AST printed with physical, double-quoted names, wrapped in CTAS, views,
//! MERGE, DELETE + INSERT. PostgreSQL, DuckDB and Trino share this standard form; where they
//! differ the caller passes the difference in.
//!
//! Incremental statements keep the local engine's meaning (see `delta::change`): the model's
//! query defines the whole table, so an incremental write and a full rebuild give the same
//! rows. The query runs once into a batch relation; the statements compare it with the table.

use phlo_transform_project::IncrementalStrategy;

use crate::Relation;

/// A double-quoted identifier.
pub fn ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// A single-quoted string literal.
pub fn literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

fn list(columns: &[String], prefix: &str) -> String {
    columns
        .iter()
        .map(|c| format!("{prefix}{}", ident(c)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `a."x" IS NOT DISTINCT FROM b."x" AND …`: null-safe equality on `columns`.
fn same(columns: &[String], a: &str, b: &str) -> String {
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
                gone = format!(
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
