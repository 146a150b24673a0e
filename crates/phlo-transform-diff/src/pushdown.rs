//! The keyed full comparison pushed down into the engine that holds both sides (a DuckDB or
//! PostgreSQL warehouse): one SQL query counts what `keyed` counts, so a large table is
//! never fetched. It stacks both sides (`UNION ALL`, with a side marker) and groups by the
//! key — grouping is NULL-safe, as the key index is. A group is one key; its two row counts
//! say added, removed, matched or duplicated; a compared column differs in a matched group
//! when its two values differ (`min(v) <> max(v)`; booleans as integers; columns compared
//! as text cast to text in each branch) or one is NULL (`count(v) = 1`), or, with a
//! tolerance, when they differ by more than it. The counts are the full comparison's, but for
//! what the engine's equality says that ours does not: `-0.0 = 0.0` there (ours compares
//! float bits), and DuckDB's `INTERVAL '1 day' = INTERVAL '24 hours'`. No samples and no
//! `--output` (the rows stay in the engine).

use datafusion::arrow::array::{Array, Int64Array, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Schema};
use futures::future::BoxFuture;
use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;

use crate::keyed::{DuplicateCounts, Duplicates, KeyedOutcome, RecordSamples, Records};
use crate::schema::Alignment;

/// An engine holding both sides as queries it can run.
pub trait PushdownEngine: Send + Sync {
    /// The engine's name, for the report (`duckdb`, `postgres`).
    fn name(&self) -> &str;
    /// The base side as a query of that engine.
    fn base_sql(&self) -> &str;
    /// The candidate side as a query of that engine.
    fn candidate_sql(&self) -> &str;
    /// Runs `sql` and returns its rows.
    fn run(&self, sql: String) -> BoxFuture<'_, Result<RecordBatch, Diagnostic>>;
}

fn ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// `SELECT <side> AS phlo_side, <alias>."<name>" AS c0, ...` of one side's `names`, each
/// column compared as text (`types`: the aligned types) cast to text in its own branch: the
/// in-memory comparison compares such a pair as text (a number against text, `uuid` or
/// `json` read as text), where PostgreSQL's `UNION ALL` would refuse to stack the two.
fn stacked(side: u8, alias: &str, names: &[String], types: &[&DataType]) -> String {
    let list = names
        .iter()
        .zip(types)
        .enumerate()
        .map(|(i, (name, data_type))| {
            let column = format!("{alias}.{}", ident(name));
            match data_type {
                DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
                    format!("CAST({column} AS VARCHAR) AS c{i}")
                }
                _ => format!("{column} AS c{i}"),
            }
        })
        .collect::<Vec<_>>()
        .join(", ");
    format!("SELECT {side} AS phlo_side, {list}")
}

/// `column` as both engines can take its `min` and `max` (PostgreSQL has none for booleans).
fn comparable(column: &str, data_type: &DataType) -> String {
    match data_type {
        DataType::Boolean => format!("CAST({column} AS INTEGER)"),
        _ => column.to_string(),
    }
}

/// The counting query over `alignment` (`candidate`: the candidate side's schema, whose
/// column names differ from the base's under `--map`).
pub fn query(alignment: &Alignment, candidate: &Schema, base_sql: &str, cand_sql: &str) -> String {
    let columns: Vec<_> = alignment.key.iter().chain(&alignment.compared).collect();
    let types: Vec<&DataType> = columns.iter().map(|c| &c.data_type).collect();
    let base_names: Vec<String> = columns.iter().map(|c| c.name.clone()).collect();
    let cand_names: Vec<String> = columns
        .iter()
        .map(|c| candidate.field(c.candidate_index).name().clone())
        .collect();
    let nkeys = alignment.key.len();
    let differs: Vec<String> = alignment
        .compared
        .iter()
        .enumerate()
        .map(|(j, c)| {
            let c_v = format!("c{}", nkeys + j);
            let v = comparable(&c_v, &c.data_type);
            // As `changed_at`: equal values (two infinities, two NaNs) never differ, and
            // an infinite tolerance leaves only a NULL against a value.
            let distinct = match c.tolerance {
                Some(t) if t.is_finite() => {
                    format!("(min({v}) <> max({v}) AND max({v}) - min({v}) > {t:e})")
                }
                Some(_) => "false".to_string(),
                None => format!("min({v}) <> max({v})"),
            };
            let v = c_v;
            format!("CASE WHEN count({v}) = 1 OR {distinct} THEN 1 ELSE 0 END AS d{j}")
        })
        .collect();
    let any_differs = match differs.len() {
        0 => "0".to_string(),
        n => (0..n)
            .map(|j| format!("d{j}"))
            .collect::<Vec<_>>()
            .join(" + "),
    };
    let sum = |value: &str, condition: &str| {
        format!("CAST(coalesce(sum(CASE WHEN {condition} THEN {value} ELSE 0 END), 0) AS BIGINT)")
    };
    let matched = "nb = 1 AND nc = 1";
    let mut outputs = vec![
        format!("{} AS base_rows", sum("nb", "nb > 0")),
        format!("{} AS candidate_rows", sum("nc", "nc > 0")),
        format!("{} AS added", sum("1", "nb = 0 AND nc = 1")),
        format!("{} AS removed", sum("1", "nb = 1 AND nc = 0")),
        format!(
            "{} AS modified",
            sum("1", &format!("{matched} AND {any_differs} > 0"))
        ),
        format!(
            "{} AS unchanged",
            sum("1", &format!("{matched} AND {any_differs} = 0"))
        ),
        format!("{} AS base_duplicate_keys", sum("1", "nb > 1")),
        format!("{} AS base_duplicate_rows", sum("nb", "nb > 1")),
        format!("{} AS candidate_duplicate_keys", sum("1", "nc > 1")),
        format!("{} AS candidate_duplicate_rows", sum("nc", "nc > 1")),
    ];
    outputs.extend(
        (0..differs.len()).map(|j| format!("{} AS changed_{j}", sum(&format!("d{j}"), matched))),
    );
    let per_key = std::iter::once(
        "count(CASE WHEN phlo_side = 0 THEN 1 END) AS nb, count(CASE WHEN phlo_side = 1 THEN 1 END) AS nc"
            .to_string(),
    )
    .chain(differs)
    .collect::<Vec<_>>()
    .join(", ");
    let group_by = (0..nkeys)
        .map(|i| format!("c{i}"))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "WITH phlo_u AS ({} FROM ({base_sql}) AS b UNION ALL {} FROM ({cand_sql}) AS c), \
         phlo_g AS (SELECT {per_key} FROM phlo_u GROUP BY {group_by}) \
         SELECT {} FROM phlo_g",
        stacked(0, "b", &base_names, &types),
        stacked(1, "c", &cand_names, &types),
        outputs.join(", ")
    )
}

/// The full comparison of `alignment`'s sides, run by `engine`.
pub async fn compare(
    engine: &dyn PushdownEngine,
    alignment: &Alignment,
    candidate: &Schema,
) -> Result<KeyedOutcome, Diagnostic> {
    let sql = query(
        alignment,
        candidate,
        engine.base_sql(),
        engine.candidate_sql(),
    );
    let batch = engine.run(sql).await?;
    let n = |name: &str| -> Result<u64, Diagnostic> {
        batch
            .column_by_name(name)
            .and_then(|c| c.as_any().downcast_ref::<Int64Array>())
            .filter(|c| c.len() == 1 && c.is_valid(0))
            .map(|c| c.value(0) as u64)
            .ok_or_else(|| {
                Diagnostic::error(
                    codes::DIFF_UNREADABLE_SIDE,
                    format!(
                        "the join diff in {} returned no count `{name}`",
                        engine.name()
                    ),
                )
                .with_help("run the diff with --strategy sampled, or on a smaller table")
            })
    };
    let records = Records {
        added: n("added")?,
        removed: n("removed")?,
        modified: n("modified")?,
        unchanged: n("unchanged")?,
    };
    let changed_values = alignment
        .compared
        .iter()
        .enumerate()
        .map(|(j, c)| Ok((c.name.clone(), n(&format!("changed_{j}"))?)))
        .collect::<Result<_, Diagnostic>>()?;
    let (base_rows, candidate_rows) = (n("base_rows")?, n("candidate_rows")?);
    Ok(KeyedOutcome {
        base_rows,
        candidate_rows,
        compared_base_rows: base_rows,
        compared_candidate_rows: candidate_rows,
        records,
        changed_values,
        duplicates: Duplicates {
            base: DuplicateCounts {
                keys: n("base_duplicate_keys")?,
                rows: n("base_duplicate_rows")?,
            },
            candidate: DuplicateCounts {
                keys: n("candidate_duplicate_keys")?,
                rows: n("candidate_duplicate_rows")?,
            },
            samples: Vec::new(),
        },
        samples: RecordSamples::default(),
        differing_rows: None,
    })
}
