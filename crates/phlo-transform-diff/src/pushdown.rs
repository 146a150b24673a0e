//! The keyed full comparison pushed down into the engine that holds both sides (a DuckDB or
//! PostgreSQL warehouse): one SQL query counts what `keyed` counts, so a large table is
//! never fetched. It stacks both sides (`UNION ALL`, with a side marker) and groups by the
//! key — grouping is NULL-safe, as the key index is. A group is one key; its two row counts
//! say added, removed, matched or duplicated; a compared column differs in a matched group
//! when its two values differ (`min(v) <> max(v)`; booleans as integers; columns compared
//! as text cast to text in each branch) or one is NULL (`count(v) = 1`), or, with a
//! tolerance, when they differ by more than it. The counts are the full comparison's, but for
//! what the engine's equality says that ours does not: `-0.0 = 0.0` there (ours compares
//! float bits), and DuckDB's `INTERVAL '1 day' = INTERVAL '24 hours'`. When anything
//! differs, a second query returns the rows of a few keys of each kind, which the in-memory
//! comparison turns into the report's samples. No `--output` (the rows stay in the engine).

use datafusion::arrow::array::{
    Array, ArrayRef, BooleanArray, Int32Array, Int64Array, RecordBatch,
};
use datafusion::arrow::compute::kernels::boolean::not;
use datafusion::arrow::compute::{cast, filter};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use futures::future::BoxFuture;
use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;
use std::sync::Arc;

use crate::keyed::{DuplicateCounts, Duplicates, KeyedDiff, KeyedOutcome, RecordSamples, Records};
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
    /// How the engine's `min`, `max` and `<>` treat a floating-point NaN.
    fn nan(&self) -> NanSemantics {
        NanSemantics::Ordered
    }
}

/// How an engine compares floating-point NaN, which decides how a float column's two values
/// are found to differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NanSemantics {
    /// NaN equals NaN and sorts above every number, so `min(v) <> max(v)` sees it as a
    /// value (DuckDB, PostgreSQL).
    Ordered,
    /// `min` and `max` skip NaN and `NaN <> NaN` holds (Trino): NaNs are counted apart with
    /// `is_nan`.
    Unordered,
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

/// The stacked sides grouped by key, shared by the counting and the sampling queries:
/// `with` defines `phlo_u` (both sides, `phlo_side` and `c0…`) and `phlo_g` (per key: the key
/// columns, `nb` and `nc` its rows on each side, `d<j>` 1 when compared column `j` differs);
/// `any_differs` is the expression over `phlo_g` that is positive when any does.
struct Grouped {
    with: String,
    any_differs: String,
    ndiffers: usize,
    nkeys: usize,
}

/// The counting query over `alignment` (`candidate`: the candidate side's schema, whose
/// column names differ from the base's under `--map`).
fn query(engine: &dyn PushdownEngine, alignment: &Alignment, candidate: &Schema) -> String {
    let g = grouped(engine, alignment, candidate);
    let sum = |value: &str, condition: &str| {
        format!("CAST(coalesce(sum(CASE WHEN {condition} THEN {value} ELSE 0 END), 0) AS BIGINT)")
    };
    let any_differs = &g.any_differs;
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
        (0..g.ndiffers).map(|j| format!("{} AS changed_{j}", sum(&format!("d{j}"), matched))),
    );
    format!("{} SELECT {} FROM phlo_g", g.with, outputs.join(", "))
}

/// The rows, from both sides (`phlo_side`, then `c0…` as stacked), of up to `limit` keys of
/// each kind — added, removed, modified, duplicated — the smallest keys of each: what the
/// report's samples are taken from, compared again in memory. A second pass over the sides.
fn sample_query(
    engine: &dyn PushdownEngine,
    alignment: &Alignment,
    candidate: &Schema,
    limit: usize,
) -> String {
    let g = grouped(engine, alignment, candidate);
    let keys: Vec<String> = (0..g.nkeys).map(|i| format!("c{i}")).collect();
    let on = keys
        .iter()
        .map(|k| format!("phlo_u.{k} IS NOT DISTINCT FROM phlo_s.{k}"))
        .collect::<Vec<_>>()
        .join(" AND ");
    let keys = keys.join(", ");
    let any_differs = &g.any_differs;
    format!(
        "{}, phlo_k AS (SELECT {keys}, CASE WHEN nb > 1 OR nc > 1 THEN 3 \
         WHEN nb = 0 THEN 0 WHEN nc = 0 THEN 1 WHEN {any_differs} > 0 THEN 2 END AS phlo_kind \
         FROM phlo_g), \
         phlo_r AS (SELECT {keys}, row_number() OVER (PARTITION BY phlo_kind ORDER BY {keys}) AS phlo_n \
         FROM phlo_k WHERE phlo_kind IS NOT NULL), \
         phlo_s AS (SELECT {keys} FROM phlo_r WHERE phlo_n <= {limit}) \
         SELECT phlo_u.* FROM phlo_u JOIN phlo_s ON {on}",
        g.with
    )
}

fn grouped(engine: &dyn PushdownEngine, alignment: &Alignment, candidate: &Schema) -> Grouped {
    let (base_sql, cand_sql) = (engine.base_sql(), engine.candidate_sql());
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
            // Where min/max skip NaN: one NaN against a number differs, two NaNs do not.
            let float = matches!(
                c.data_type,
                DataType::Float16 | DataType::Float32 | DataType::Float64
            );
            let distinct = match engine.nan() {
                NanSemantics::Unordered if float => {
                    let nans = format!("count_if(is_nan({c_v}))");
                    format!("(({nans} = 1 AND count({c_v}) = 2) OR ({nans} = 0 AND {distinct}))")
                }
                _ => distinct,
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
    let ndiffers = differs.len();
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
    Grouped {
        with: format!(
            "WITH phlo_u AS ({} FROM ({base_sql}) AS b UNION ALL {} FROM ({cand_sql}) AS c), \
             phlo_g AS (SELECT {group_by}, {per_key} FROM phlo_u GROUP BY {group_by})",
            stacked(0, "b", &base_names, &types),
            stacked(1, "c", &cand_names, &types),
        ),
        any_differs,
        ndiffers,
        nkeys,
    }
}

/// The full comparison of `alignment`'s sides, run by `engine`; with up to `sample_limit`
/// samples of each kind when anything differs (a second query, [`sample_query`]).
pub async fn compare(
    engine: &dyn PushdownEngine,
    alignment: &Alignment,
    candidate: &Schema,
    sample_limit: usize,
) -> Result<KeyedOutcome, Diagnostic> {
    let sql = query(engine, alignment, candidate);
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
    let duplicates = Duplicates {
        base: DuplicateCounts {
            keys: n("base_duplicate_keys")?,
            rows: n("base_duplicate_rows")?,
        },
        candidate: DuplicateCounts {
            keys: n("candidate_duplicate_keys")?,
            rows: n("candidate_duplicate_rows")?,
        },
        samples: Vec::new(),
    };
    let differs = records.added + records.removed + records.modified > 0
        || duplicates.base.keys + duplicates.candidate.keys > 0;
    let sampled = match sample_limit {
        0 => None,
        _ if !differs => None,
        limit => Some(samples(engine, alignment, candidate, limit).await?),
    };
    let (samples, duplicate_samples) = sampled.unwrap_or_default();
    Ok(KeyedOutcome {
        base_rows,
        candidate_rows,
        compared_base_rows: base_rows,
        compared_candidate_rows: candidate_rows,
        records,
        changed_values,
        duplicates: Duplicates {
            samples: duplicate_samples,
            ..duplicates
        },
        samples,
        differing_rows: None,
    })
}

/// `alignment` with each decimal column at the scale the sample `rows` (`phlo_side`, then
/// the aligned columns) were read at when that is larger: a decimal whose scale comes from
/// its values (PostgreSQL `numeric`) has none in the sides' schemas, which were read without
/// rows, and casting its values to that scale would round them.
fn at_read_scales(alignment: &Alignment, rows: &RecordBatch) -> Alignment {
    let mut out = alignment.clone();
    let columns = out.key.iter_mut().chain(out.compared.iter_mut());
    for (i, c) in columns.enumerate() {
        if let (DataType::Decimal128(_, aligned), DataType::Decimal128(_, read)) =
            (&c.data_type, rows.column(i + 1).data_type())
        {
            if read > aligned {
                c.data_type = DataType::Decimal128(38, *read);
            }
        }
    }
    let fields: Vec<Field> = out
        .key
        .iter()
        .chain(&out.compared)
        .zip(out.schema.fields())
        .map(|(c, f)| f.as_ref().clone().with_data_type(c.data_type.clone()))
        .collect();
    out.schema = Arc::new(Schema::new(fields));
    out
}

/// The report's samples: the rows of the sampled keys ([`sample_query`]) compared again by
/// the in-memory comparison, each side's columns cast to the aligned types as
/// [`Alignment::project`] casts them. Its samples of each kind and of duplicate keys.
async fn samples(
    engine: &dyn PushdownEngine,
    alignment: &Alignment,
    candidate: &Schema,
    limit: usize,
) -> Result<(RecordSamples, Vec<serde_json::Value>), Diagnostic> {
    let sql = sample_query(engine, alignment, candidate, limit);
    let rows = engine.run(sql).await?;
    let unreadable = |e: String| {
        Diagnostic::error(
            codes::DIFF_UNREADABLE_SIDE,
            format!("the sample rows of the join diff in {}: {e}", engine.name()),
        )
        .with_help("--samples 0 leaves the samples out")
    };
    // The side marker as the engine typed its literal (DuckDB INTEGER, PostgreSQL int4).
    let marker = cast(rows.column(0), &DataType::Int32).map_err(|e| unreadable(e.to_string()))?;
    let side: Vec<bool> = marker
        .as_any()
        .downcast_ref::<Int32Array>()
        .ok_or_else(|| unreadable("no side marker".into()))?
        .iter()
        .map(|v| v == Some(0))
        .collect();
    let is_base = BooleanArray::from(side);
    let alignment = &at_read_scales(alignment, &rows);
    let aligned = |keep: &BooleanArray| -> Result<RecordBatch, Diagnostic> {
        let columns = alignment
            .key
            .iter()
            .chain(&alignment.compared)
            .enumerate()
            .map(|(i, c)| {
                let kept =
                    filter(rows.column(i + 1), keep).map_err(|e| unreadable(e.to_string()))?;
                cast(&kept, &c.data_type)
                    .map_err(|e| unreadable(format!("column `{}`: {e}", c.name)))
            })
            .collect::<Result<Vec<ArrayRef>, _>>()?;
        RecordBatch::try_new(alignment.schema.clone(), columns)
            .map_err(|e| unreadable(e.to_string()))
    };
    let mut diff = KeyedDiff::new(alignment, None, limit, false, None)?;
    diff.push_base(aligned(&is_base)?)?;
    diff.finish_base()?;
    diff.push_candidate(aligned(
        &not(&is_base).map_err(|e| unreadable(e.to_string()))?,
    )?)?;
    let out = diff.finish()?;
    Ok((out.samples, out.duplicates.samples))
}
