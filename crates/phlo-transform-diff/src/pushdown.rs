//! The keyed full comparison pushed down into the engine that holds both sides (a DuckDB,
//! PostgreSQL or Trino warehouse): one SQL query counts what `keyed` counts, so a large table
//! is never fetched. It stacks both sides (`UNION ALL`, with a side marker) and groups by the
//! key — grouping is NULL-safe, as the key index is. A group is one key: its two row counts
//! say added, removed, matched or duplicated, and each compared column's value on each side
//! (`max` of that side's rows; booleans as integers; columns compared as text cast to text in
//! each branch) says whether it differs — one NULL, or two values that differ (by more than
//! the column's tolerance). The counts are the full comparison's, but for what the engine's
//! equality says that ours does not: `-0.0 = 0.0` there (ours compares float bits), and
//! DuckDB's `INTERVAL '1 day' = INTERVAL '24 hours'`. The same query returns, after its row
//! of counts, the groups of the smallest keys of each differing kind (on Trino a second
//! statement: see [`PushdownEngine::materializes_with`]), which the in-memory comparison
//! turns into the report's samples. No `--output` (the rows stay in the engine).

use datafusion::arrow::array::{
    Array, ArrayRef, BooleanArray, Int32Array, Int64Array, RecordBatch,
};
use datafusion::arrow::compute::{cast, filter};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use futures::future::BoxFuture;
use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;
use std::sync::Arc;

use crate::keyed::{DuplicateCounts, Duplicates, KeyedDiff, KeyedOutcome, RecordSamples, Records};
use crate::schema::{AlignedColumn, Alignment};
use crate::values;
use serde_json::{json, Value};

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
    /// How the engine's `<>` treats a floating-point NaN.
    fn nan(&self) -> NanSemantics {
        NanSemantics::Ordered
    }
    /// Whether a `WITH` query read twice in a statement is evaluated once (DuckDB and
    /// PostgreSQL materialise it). Where it is not (Trino inlines it), one statement with the
    /// counts and the samples would group both sides twice at once, in twice the memory, so
    /// the samples are a second statement.
    fn materializes_with(&self) -> bool {
        true
    }
}

/// What a comparison query returns (see [`query`]).
#[derive(Clone, Copy, PartialEq)]
enum Part {
    /// The row of counts.
    Counts,
    /// The sampled groups: up to this many keys of each differing kind.
    Samples(usize),
    /// The row of counts, then the sampled groups.
    Both(usize),
}

/// How an engine compares floating-point NaN, which decides how a float column's two values
/// are found to differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NanSemantics {
    /// NaN equals NaN and sorts above every number, as in memory (DuckDB, PostgreSQL).
    Ordered,
    /// `NaN <> NaN` holds (Trino): NaNs are compared apart with `is_nan`.
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

/// `column` as every engine can take its `max` (PostgreSQL has none for booleans).
fn comparable(column: &str, data_type: &DataType) -> String {
    match data_type {
        DataType::Boolean => format!("CAST({column} AS INTEGER)"),
        _ => column.to_string(),
    }
}

/// `phlo_kind` of a group: what its key is.
const ADDED: i32 = 0;
const REMOVED: i32 = 1;
const MODIFIED: i32 = 2;
const DUPLICATED: i32 = 3;
const UNCHANGED: i32 = 4;
/// `phlo_kind` of the row of counts.
const COUNTS: i32 = -1;

/// The counts of the row of counts, before `changed_<j>`.
const COUNT_NAMES: [&str; 10] = [
    "base_rows",
    "candidate_rows",
    "added",
    "removed",
    "modified",
    "unchanged",
    "base_duplicate_keys",
    "base_duplicate_rows",
    "candidate_duplicate_keys",
    "candidate_duplicate_rows",
];

/// 1 when a matched key's values `b` (base) and `v` (candidate) of column `c` differ, as
/// `changed_at` decides it: one NULL, or two values not equal — two infinities or two NaNs
/// are equal, and with a tolerance only a difference beyond it counts (an infinite one
/// leaves only a NULL against a value).
fn differs(b: &str, v: &str, c: &AlignedColumn, nan: NanSemantics) -> String {
    let distinct = match c.tolerance {
        Some(t) if t.is_finite() => format!("({b} <> {v} AND abs({b} - {v}) > {t:e})"),
        Some(_) => "false".to_string(),
        None => format!("{b} <> {v}"),
    };
    let float = matches!(
        c.data_type,
        DataType::Float16 | DataType::Float32 | DataType::Float64
    );
    let distinct = match nan {
        NanSemantics::Unordered if float => format!(
            "(is_nan({b}) <> is_nan({v}) OR (NOT is_nan({b}) AND NOT is_nan({v}) AND {distinct}))"
        ),
        _ => distinct,
    };
    format!("CASE WHEN ({b} IS NULL) <> ({v} IS NULL) OR {distinct} THEN 1 ELSE 0 END")
}

/// The comparison query over `alignment` (`candidate`: the candidate side's schema, whose
/// column names differ from the base's under `--map`) returning `part`: the row of counts
/// (`phlo_kind` -1), and/or the sampled groups — up to `limit` smallest keys of each
/// differing kind: `phlo_kind`, `phlo_n` (the key's place in its kind), `nb` and `nc` (rows
/// per side), the key `c<i>`, and each compared column's base `b<j>` and candidate `v<j>`
/// values.
fn query(
    engine: &dyn PushdownEngine,
    alignment: &Alignment,
    candidate: &Schema,
    part: Part,
) -> String {
    let (base_sql, cand_sql) = (engine.base_sql(), engine.candidate_sql());
    let columns: Vec<_> = alignment.key.iter().chain(&alignment.compared).collect();
    let types: Vec<&DataType> = columns.iter().map(|c| &c.data_type).collect();
    let base_names: Vec<String> = columns.iter().map(|c| c.name.clone()).collect();
    let cand_names: Vec<String> = columns
        .iter()
        .map(|c| candidate.field(c.candidate_index).name().clone())
        .collect();
    let nkeys = alignment.key.len();
    let keys = (0..nkeys)
        .map(|i| format!("c{i}"))
        .collect::<Vec<_>>()
        .join(", ");
    let mut per_key = vec![
        "count(CASE WHEN phlo_side = 0 THEN 1 END) AS nb".to_string(),
        "count(CASE WHEN phlo_side = 1 THEN 1 END) AS nc".to_string(),
    ];
    let mut differ = Vec::new();
    let mut values = Vec::new();
    for (j, c) in alignment.compared.iter().enumerate() {
        let value = comparable(&format!("c{}", nkeys + j), &c.data_type);
        per_key.push(format!(
            "max(CASE WHEN phlo_side = 0 THEN {value} END) AS b{j}, max(CASE WHEN phlo_side = 1 THEN {value} END) AS v{j}"
        ));
        differ.push(format!(
            ", {} AS d{j}",
            differs(&format!("b{j}"), &format!("v{j}"), c, engine.nan())
        ));
        values.push(format!("b{j}, v{j}"));
    }
    let any_differs = match alignment.compared.len() {
        0 => "0".to_string(),
        n => (0..n)
            .map(|j| format!("d{j}"))
            .collect::<Vec<_>>()
            .join(" + "),
    };
    let kind = format!(
        "CASE WHEN nb > 1 OR nc > 1 THEN {DUPLICATED} WHEN nb = 0 THEN {ADDED} \
         WHEN nc = 0 THEN {REMOVED} WHEN {any_differs} > 0 THEN {MODIFIED} ELSE {UNCHANGED} END"
    );
    let sum = |value: &str, condition: &str| {
        format!("CAST(coalesce(sum(CASE WHEN {condition} THEN {value} ELSE 0 END), 0) AS BIGINT)")
    };
    let matched = "nb = 1 AND nc = 1";
    let kind_is = |k: i32| format!("phlo_kind = {k}");
    let mut counts = [
        sum("nb", "nb > 0"),
        sum("nc", "nc > 0"),
        sum("1", &kind_is(ADDED)),
        sum("1", &kind_is(REMOVED)),
        sum("1", &kind_is(MODIFIED)),
        sum("1", &kind_is(UNCHANGED)),
        sum("1", "nb > 1"),
        sum("nb", "nb > 1"),
        sum("1", "nc > 1"),
        sum("nc", "nc > 1"),
    ]
    .iter()
    .zip(COUNT_NAMES)
    .map(|(sum, name)| format!("{sum} AS {name}"))
    .collect::<Vec<_>>();
    counts.extend(
        (0..alignment.compared.len())
            .map(|j| format!("{} AS changed_{j}", sum(&format!("d{j}"), matched))),
    );
    let with = format!(
        "WITH phlo_u AS ({} FROM ({base_sql}) AS b UNION ALL {} FROM ({cand_sql}) AS c), \
         phlo_g AS (SELECT {keys}, {} FROM phlo_u GROUP BY {keys}), \
         phlo_d AS (SELECT phlo_x.*, {kind} AS phlo_kind FROM (SELECT phlo_g.*{} FROM phlo_g) AS phlo_x)",
        stacked(0, "b", &base_names, &types),
        stacked(1, "c", &cand_names, &types),
        per_key.join(", "),
        differ.concat(),
    );
    // The row of counts; `padding` fills the sampled groups' columns.
    let counted = |padding: &str| {
        format!(
            "SELECT {COUNTS} AS phlo_kind, {}{padding} FROM phlo_d",
            counts.join(", ")
        )
    };
    let limit = match part {
        Part::Counts => return format!("{with} {}", counted("")),
        Part::Samples(limit) | Part::Both(limit) => limit,
    };
    let sampled = std::iter::once(format!("phlo_n, nb, nc, {keys}"))
        .chain(values)
        .collect::<Vec<_>>()
        .join(", ");
    // A union's columns are named by its first branch, the row of counts.
    let padding = sampled
        .split(", ")
        .map(|name| format!("NULL AS {name}"))
        .collect::<Vec<_>>()
        .join(", ");
    // NULL keys first, as the key index orders them (Arrow's row format).
    let order = (0..nkeys)
        .map(|i| format!("c{i} NULLS FIRST"))
        .collect::<Vec<_>>()
        .join(", ");
    let with = format!(
        "{with}, phlo_s AS (SELECT * FROM (SELECT phlo_d.*, row_number() OVER \
         (PARTITION BY phlo_kind ORDER BY {order}) AS phlo_n FROM phlo_d WHERE phlo_kind <> {UNCHANGED}) \
         AS phlo_r WHERE phlo_n <= {limit})"
    );
    match part {
        Part::Samples(_) => format!("{with} SELECT phlo_kind, {sampled} FROM phlo_s"),
        _ => format!(
            "{with} {} UNION ALL SELECT phlo_kind, {}, {sampled} FROM phlo_s",
            counted(&format!(", {padding}")),
            vec!["NULL"; counts.len()].join(", "),
        ),
    }
}

/// The full comparison of `alignment`'s sides, run by `engine`; with up to `sample_limit`
/// samples of each kind, from the same statement where the engine materialises `WITH`
/// queries, else from a second one when anything differs.
pub async fn compare(
    engine: &dyn PushdownEngine,
    alignment: &Alignment,
    candidate: &Schema,
    sample_limit: usize,
) -> Result<KeyedOutcome, Diagnostic> {
    let one_statement = sample_limit > 0 && engine.materializes_with();
    let part = match one_statement {
        true => Part::Both(sample_limit),
        false => Part::Counts,
    };
    let batch = engine
        .run(query(engine, alignment, candidate, part))
        .await?;
    let unreadable = |what: String| {
        Diagnostic::error(
            codes::DIFF_UNREADABLE_SIDE,
            format!("the join diff in {} returned {what}", engine.name()),
        )
        .with_help("run the diff with --strategy sampled, or on a smaller table")
    };
    let int = |name: &str, to: &DataType| -> Result<ArrayRef, Diagnostic> {
        let column = batch
            .column_by_name(name)
            .ok_or_else(|| unreadable(format!("no column `{name}`")))?;
        cast(column, to).map_err(|e| unreadable(format!("`{name}` not an integer: {e}")))
    };
    let kinds = kinds_of(&batch).map_err(unreadable)?;
    let totals = (0..kinds.len())
        .find(|&i| kinds.value(i) == COUNTS)
        .ok_or_else(|| unreadable("no row of counts".into()))?;
    let n = |name: &str| -> Result<u64, Diagnostic> {
        let column = int(name, &DataType::Int64)?;
        let column = column.as_any().downcast_ref::<Int64Array>().expect("cast");
        match column.is_valid(totals) {
            true => Ok(column.value(totals) as u64),
            false => Err(unreadable(format!("no count `{name}`"))),
        }
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
    let mut duplicates = Duplicates {
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
    let differs = records.added + records.removed + records.modified > 0 || duplicates.any();
    let (samples, duplicate_samples) = match sample_limit {
        0 => Default::default(),
        _ if !differs => Default::default(),
        _ if one_statement => samples(&batch, alignment, sample_limit).map_err(unreadable)?,
        limit => {
            let part = Part::Samples(limit);
            let rows = engine
                .run(query(engine, alignment, candidate, part))
                .await?;
            samples(&rows, alignment, limit).map_err(unreadable)?
        }
    };
    duplicates.samples = duplicate_samples;
    Ok(KeyedOutcome {
        base_rows,
        candidate_rows,
        compared_base_rows: base_rows,
        compared_candidate_rows: candidate_rows,
        records,
        changed_values,
        duplicates,
        samples,
        differing_rows: None,
    })
}

/// The report's samples from the sampled groups of `rows` (see [`query`]): added, removed
/// and modified keys compared again by the in-memory comparison — each side's row its key
/// and its values — so they read exactly as for a fetched table; duplicated keys with their
/// row counts.
fn samples(
    rows: &RecordBatch,
    alignment: &Alignment,
    limit: usize,
) -> Result<(RecordSamples, Vec<Value>), String> {
    let kinds = &kinds_of(rows)?;
    let alignment = &at_read_scales(alignment, rows);
    let column = |name: &str| {
        rows.column_by_name(name)
            .cloned()
            .ok_or_else(|| format!("no column `{name}`"))
    };
    let nkeys = alignment.key.len();
    let mut keys = Vec::with_capacity(nkeys);
    for (i, c) in alignment.key.iter().enumerate() {
        let key = cast(&column(&format!("c{i}"))?, &c.data_type)
            .map_err(|e| format!("key `{}`: {e}", c.name))?;
        keys.push(key);
    }
    // One side's rows: the key, then each compared column's value on that side.
    let side = |prefix: char, of: &[i32]| -> Result<RecordBatch, String> {
        let keep: BooleanArray = kinds.iter().map(|k| k.map(|k| of.contains(&k))).collect();
        let mut columns = Vec::with_capacity(alignment.schema.fields().len());
        for key in &keys {
            columns.push(filter(key, &keep).map_err(|e| e.to_string())?);
        }
        for (j, c) in alignment.compared.iter().enumerate() {
            let values =
                filter(&column(&format!("{prefix}{j}"))?, &keep).map_err(|e| e.to_string())?;
            columns.push(cast(&values, &c.data_type).map_err(|e| format!("`{}`: {e}", c.name))?);
        }
        RecordBatch::try_new(alignment.schema.clone(), columns).map_err(|e| e.to_string())
    };
    let diagnostic = |d: Diagnostic| d.message;
    let mut diff = KeyedDiff::new(alignment, None, limit, false, None).map_err(diagnostic)?;
    diff.push_base(side('b', &[REMOVED, MODIFIED])?)
        .map_err(diagnostic)?;
    diff.finish_base().map_err(diagnostic)?;
    diff.push_candidate(side('v', &[ADDED, MODIFIED])?)
        .map_err(diagnostic)?;
    let samples = diff.finish().map_err(diagnostic)?.samples;
    let counts = |name: &str| -> Result<Int64Array, String> {
        let c = cast(&column(name)?, &DataType::Int64).map_err(|e| e.to_string())?;
        Ok(c.as_any()
            .downcast_ref::<Int64Array>()
            .expect("cast")
            .clone())
    };
    let (nb, nc, order) = (counts("nb")?, counts("nc")?, counts("phlo_n")?);
    let mut duplicated: Vec<usize> = (0..rows.num_rows())
        .filter(|&r| kinds.value(r) == DUPLICATED)
        .collect();
    // In key order, as the engine numbered them (the rows of a union come in any order).
    duplicated.sort_by_key(|&r| order.value(r));
    let duplicates = duplicated
        .into_iter()
        .map(|r| {
            let key: serde_json::Map<String, Value> = alignment
                .key
                .iter()
                .zip(&keys)
                .map(|(c, array)| (c.name.clone(), values::value(array, r)))
                .collect();
            json!({"key": key, "base_rows": nb.value(r), "candidate_rows": nc.value(r)})
        })
        .collect();
    Ok((samples, duplicates))
}

/// The `phlo_kind` of each row of a comparison query's result.
fn kinds_of(rows: &RecordBatch) -> Result<Int32Array, String> {
    let column = rows
        .column_by_name("phlo_kind")
        .ok_or("no column `phlo_kind`")?;
    let kinds = cast(column, &DataType::Int32).map_err(|e| format!("`phlo_kind`: {e}"))?;
    Ok(kinds
        .as_any()
        .downcast_ref::<Int32Array>()
        .expect("cast to Int32")
        .clone())
}

/// `alignment` with each decimal column at the scale the sampled `rows` were read at when
/// that is larger: a decimal whose scale comes from its values (PostgreSQL `numeric`) has
/// none in the sides' schemas, which were read without rows, and casting its values to that
/// scale would round them.
fn at_read_scales(alignment: &Alignment, rows: &RecordBatch) -> Alignment {
    let read_scale = |name: &str| match rows.column_by_name(name).map(|c| c.data_type()) {
        Some(DataType::Decimal128(_, s)) => Some(*s),
        _ => None,
    };
    let mut out = alignment.clone();
    let keys = out
        .key
        .iter_mut()
        .enumerate()
        .map(|(i, c)| (c, read_scale(&format!("c{i}"))));
    let compared = out.compared.iter_mut().enumerate().map(|(j, c)| {
        (
            c,
            read_scale(&format!("b{j}")).max(read_scale(&format!("v{j}"))),
        )
    });
    for (c, read) in keys.chain(compared) {
        if let (DataType::Decimal128(_, aligned), Some(read)) = (&c.data_type, read) {
            if read > *aligned {
                c.data_type = DataType::Decimal128(38, read);
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
