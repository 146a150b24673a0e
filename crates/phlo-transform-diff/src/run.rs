//! Runs one diff: two sides as DataFusion DataFrames, a key, a strategy, a policy → a report.
//!
//! The sides are streamed (`execute_stream`) batch by batch and aligned as they arrive; only
//! the base side is held (for the key index), the candidate side never is.

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::{DataType, Schema};
use datafusion::common::stats::Precision;
use datafusion::prelude::DataFrame;
use futures::StreamExt;
use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;
use serde_json::{Map, Value};
use std::path::PathBuf;
use std::sync::Arc;

use crate::aggregate::{aggregate, differing, AggregateColumn, ColumnAggregates};
use crate::checksum::Checksums;
use crate::hashing::RowFilter;
use crate::keyed::{KeyedDiff, KeyedOutcome};
use crate::options::{DiffOptions, Strategy};
use crate::policy::{evaluate, DiffPolicy, Measured};
use crate::pushdown::{self, PushdownEngine};
use crate::report::{
    DiffReport, KeySource, PartitionSummary, RowCounts, SampleSummary, SideReport,
};
use crate::schema::{Alignment, Side};

/// One side: what it is and how to read it.
pub struct SideInput {
    pub description: String,
    pub frame: DataFrame,
    /// Columns the side guarantees non-null although its query's schema says nullable (a
    /// model's `@key` / `@not-null`, which its table enforces): the schema difference
    /// compares declared nullability, not what the query planner could prove.
    pub not_null: Vec<String>,
}

/// `schema` with the `not_null` columns marked non-nullable.
fn declared(schema: &Schema, not_null: &[String]) -> Schema {
    let fields: Vec<_> = schema
        .fields()
        .iter()
        .map(|f| {
            if not_null.iter().any(|c| c == f.name()) {
                Arc::new(f.as_ref().clone().with_nullable(false))
            } else {
                f.clone()
            }
        })
        .collect();
    Schema::new_with_metadata(fields, schema.metadata().clone())
}

pub struct KeyChoice {
    pub columns: Vec<String>,
    pub source: KeySource,
    /// For an inferred key: what made it unique.
    pub from: Option<String>,
}

pub struct DiffRequest {
    pub model: String,
    pub base: SideInput,
    pub candidate: SideInput,
    pub key: KeyChoice,
    /// `None`: chosen by size (full, or sampled above `options.large_table_rows` base rows).
    pub strategy: Option<Strategy>,
    pub options: DiffOptions,
    pub policy: DiffPolicy,
    /// Write the differing rows here (Parquet).
    pub output: Option<PathBuf>,
    /// Both sides live in this engine: the full comparison runs there as one query
    /// (`pushdown`), and the frames only give the sides' schemas. Keyed and full only.
    pub pushdown: Option<Box<dyn PushdownEngine>>,
}

fn unreadable(side: &str, e: impl std::fmt::Display) -> Diagnostic {
    Diagnostic::error(
        codes::DIFF_UNREADABLE_SIDE,
        format!("the {side} side cannot be read: {e}"),
    )
    .with_help(
        "check the side exists and its files are readable (`phlo-transform run` builds the model)",
    )
}

/// Streams `frame`, aligned, into `sink`.
async fn stream(
    frame: DataFrame,
    alignment: &Alignment,
    side: Side,
    mut sink: impl FnMut(RecordBatch) -> Result<(), Diagnostic>,
) -> Result<(), Diagnostic> {
    let label = match side {
        Side::Base => "base",
        Side::Candidate => "candidate",
    };
    let mut batches = frame
        .execute_stream()
        .await
        .map_err(|e| unreadable(label, e.strip_backtrace()))?;
    while let Some(batch) = batches.next().await {
        let batch = batch.map_err(|e| unreadable(label, e.strip_backtrace()))?;
        sink(alignment.project(&batch, side)?)?;
    }
    Ok(())
}

/// The side's row count when the plan knows it exactly (Parquet files: from their footers),
/// to size the key index once instead of growing it.
async fn exact_rows(frame: &DataFrame) -> Option<usize> {
    let plan = frame.clone().create_physical_plan().await.ok()?;
    match plan.partition_statistics(None).ok()?.num_rows {
        Precision::Exact(n) => Some(n),
        _ => None,
    }
}

async fn keyed(
    base: DataFrame,
    candidate: DataFrame,
    alignment: &Alignment,
    filter: Option<RowFilter>,
    opts: &DiffOptions,
    keep_rows: bool,
) -> Result<KeyedOutcome, Diagnostic> {
    let hint = exact_rows(&base).await;
    let mut diff = KeyedDiff::new(alignment, filter, opts.sample_limit, keep_rows, hint)?;
    stream(base, alignment, Side::Base, |b| diff.push_base(b)).await?;
    diff.finish_base()?;
    stream(candidate, alignment, Side::Candidate, |b| {
        diff.push_candidate(b)
    })
    .await?;
    diff.finish()
}

async fn checksums(
    frame: DataFrame,
    alignment: &Alignment,
    side: Side,
    buckets: usize,
) -> Result<Checksums, Diagnostic> {
    let mut sums = Checksums::new(buckets, alignment.key.len());
    stream(frame, alignment, side, |b| sums.push(&b)).await?;
    Ok(sums)
}

/// The aggregated columns of one side: its names and types of the compared columns.
fn side_columns(schema: &Schema, alignment: &Alignment, side: Side) -> Vec<(String, DataType)> {
    alignment
        .compared
        .iter()
        .map(|c| {
            let f = schema.field(match side {
                Side::Base => c.base_index,
                Side::Candidate => c.candidate_index,
            });
            (f.name().clone(), f.data_type().clone())
        })
        .collect()
}

fn as_columns(cols: &[(String, DataType)]) -> Vec<AggregateColumn<'_>> {
    cols.iter()
        .map(|(name, data_type)| AggregateColumn { name, data_type })
        .collect()
}

async fn aggregates(
    req: &DiffRequest,
    alignment: &Alignment,
) -> Result<(u64, u64, Vec<ColumnAggregates>), Diagnostic> {
    let b = side_columns(req.base.frame.schema().as_arrow(), alignment, Side::Base);
    let c = side_columns(
        req.candidate.frame.schema().as_arrow(),
        alignment,
        Side::Candidate,
    );
    let (base_rows, base_stats) =
        aggregate(req.base.frame.clone(), &as_columns(&b), "base").await?;
    let (cand_rows, cand_stats) =
        aggregate(req.candidate.frame.clone(), &as_columns(&c), "candidate").await?;
    let out = alignment
        .compared
        .iter()
        .zip(base_stats.into_iter().zip(cand_stats))
        .map(|(col, (base, candidate))| ColumnAggregates {
            column: col.name.clone(),
            differs: differing(&base, &candidate, col.tolerance),
            base,
            candidate,
        })
        .collect();
    Ok((base_rows, cand_rows, out))
}

/// Chooses the strategy: as requested, aggregate without a key, else by the base side's size;
/// a pushed-down comparison is the full one.
async fn choose(req: &DiffRequest) -> Result<(Strategy, String), Diagnostic> {
    let keyless = req.key.columns.is_empty();
    if let Some(engine) = &req.pushdown {
        return match req.strategy {
            None | Some(Strategy::Full) if !keyless => Ok((
                Strategy::Full,
                format!(
                    "every row compared in {} by one join-diff query, which also returns the samples (the sides are not fetched)",
                    engine.name()
                ),
            )),
            _ => Err(Diagnostic::error(
                codes::DIFF_INVALID_OPTION,
                "a comparison pushed down into the warehouse is keyed and full only",
            )
            .with_help("pass a key, and --full or no --strategy")),
        };
    }
    match req.strategy {
        Some(Strategy::Aggregate) => Ok((Strategy::Aggregate, "requested".into())),
        Some(s) if keyless => match s {
            Strategy::Full => Ok((
                Strategy::Aggregate,
                "no key: rows cannot be matched, so counts and aggregates are compared".into(),
            )),
            _ => Err(Diagnostic::error(
                codes::DIFF_INVALID_OPTION,
                format!(
                    "the {} strategy needs a key, and this diff has none",
                    s.as_str()
                ),
            )
            .with_help(
                "pass --key <columns>, declare `@key` in the model, or use --strategy aggregate",
            )),
        },
        Some(s) => Ok((s, "requested".into())),
        None if keyless => Ok((
            Strategy::Aggregate,
            "no key: counts and aggregates; --key or @key compares rows".into(),
        )),
        None => {
            let rows =
                req.base
                    .frame
                    .clone()
                    .count()
                    .await
                    .map_err(|e| unreadable("base", e.strip_backtrace()))? as u64;
            if rows > req.options.large_table_rows {
                Ok((
                    Strategy::Sampled,
                    format!(
                        "{} base rows: a {}% key sample; --full compares every row",
                        crate::report::group(rows),
                        req.options.sample_fraction * 100.0
                    ),
                ))
            } else {
                Ok((Strategy::Full, "every row compared".into()))
            }
        }
    }
}

/// Runs the diff `req` describes.
pub async fn diff(req: DiffRequest) -> Result<DiffReport, Diagnostic> {
    let mut options = req.options.clone();
    options.key = req.key.columns.clone();
    let alignment = Alignment::new(
        &declared(req.base.frame.schema().as_arrow(), &req.base.not_null),
        &declared(
            req.candidate.frame.schema().as_arrow(),
            &req.candidate.not_null,
        ),
        &options,
    )?;
    if req.options.sample_fraction <= 0.0 || req.options.sample_fraction > 1.0 {
        return Err(Diagnostic::error(
            codes::DIFF_INVALID_OPTION,
            format!(
                "sample fraction {} is not in (0, 1]",
                req.options.sample_fraction
            ),
        )
        .with_help("pass e.g. --sample 0.01 for 1% of the keys"));
    }
    let (strategy, strategy_reason) = choose(&req).await?;
    let keep_rows = req.output.is_some();
    let mut report = DiffReport {
        model: req.model.clone(),
        base: SideReport {
            label: "base".into(),
            description: req.base.description.clone(),
        },
        candidate: SideReport {
            label: "candidate".into(),
            description: req.candidate.description.clone(),
        },
        key: req.key.columns.clone(),
        key_inferred: req.key.source == KeySource::Inferred,
        key_source: req.key.source.clone(),
        key_from: req.key.from.clone(),
        strategy,
        strategy_reason,
        rows: RowCounts::default(),
        records: None,
        changed_values: Map::new(),
        schema: alignment.schema_diff.clone(),
        duplicates: None,
        samples: None,
        aggregates: None,
        partitions: None,
        sample: None,
        policy: Default::default(),
        warnings: alignment.warnings.clone(),
        output: None,
    };
    let keyed_outcome = match strategy {
        Strategy::Aggregate => {
            let (b, c, aggs) = aggregates(&req, &alignment).await?;
            report.rows.base = b;
            report.rows.candidate = c;
            report.aggregates = Some(aggs);
            None
        }
        Strategy::Full => Some(match &req.pushdown {
            Some(engine) => {
                let candidate = req.candidate.frame.schema().as_arrow().clone();
                pushdown::compare(
                    engine.as_ref(),
                    &alignment,
                    &candidate,
                    options.sample_limit,
                )
                .await?
            }
            None => {
                keyed(
                    req.base.frame.clone(),
                    req.candidate.frame.clone(),
                    &alignment,
                    None,
                    &options,
                    keep_rows,
                )
                .await?
            }
        }),
        Strategy::Sampled => {
            let out = keyed(
                req.base.frame.clone(),
                req.candidate.frame.clone(),
                &alignment,
                Some(RowFilter::Sample(options.sample_fraction)),
                &options,
                keep_rows,
            )
            .await?;
            report.sample = Some(SampleSummary {
                fraction: options.sample_fraction,
                base_rows: out.compared_base_rows,
                candidate_rows: out.compared_candidate_rows,
            });
            Some(out)
        }
        Strategy::Partition => {
            let buckets = options.partitions.max(1);
            let b = checksums(req.base.frame.clone(), &alignment, Side::Base, buckets).await?;
            let c = checksums(
                req.candidate.frame.clone(),
                &alignment,
                Side::Candidate,
                buckets,
            )
            .await?;
            let wanted = b.differing(&c);
            let compared = wanted.iter().filter(|w| **w).count();
            let mut out = keyed(
                req.base.frame.clone(),
                req.candidate.frame.clone(),
                &alignment,
                Some(RowFilter::Buckets(wanted)),
                &options,
                keep_rows,
            )
            .await?;
            // Rows in the partitions that matched are unchanged.
            out.records.unchanged += b.rows - out.compared_base_rows;
            report.partitions = Some(PartitionSummary {
                partitions: buckets,
                compared,
            });
            Some(out)
        }
    };
    if let Some(out) = keyed_outcome {
        report.rows.base = out.base_rows;
        report.rows.candidate = out.candidate_rows;
        for (column, n) in &out.changed_values {
            report
                .changed_values
                .insert(column.clone(), Value::from(*n));
        }
        if out.duplicates.any() {
            report.warnings.push(
                Diagnostic::warning(
                    codes::DIFF_DUPLICATE_KEYS,
                    format!(
                        "the key ({}) is not unique: {} base keys ({} rows) and {} candidate keys ({} rows) occur more than once; their rows are listed as duplicates and not compared",
                        req.key.columns.join(", "),
                        out.duplicates.base.keys,
                        out.duplicates.base.rows,
                        out.duplicates.candidate.keys,
                        out.duplicates.candidate.rows
                    ),
                )
                .with_help("diff on a key that identifies one row (--key a,b), or fix the model's duplicates"),
            );
        }
        match (&req.output, &out.differing_rows) {
            (Some(path), Some(batches)) => {
                crate::output::write_parquet(path, &alignment.schema, batches)?;
                report.output = Some(path.display().to_string());
            }
            (Some(_), None) => report.warnings.push(
                Diagnostic::warning(
                    codes::DIFF_INVALID_OPTION,
                    "--output was not written: the comparison ran in the warehouse, and the rows stayed there",
                )
                .with_help("diff a smaller table, or --strategy sampled, to export differing rows"),
            ),
            _ => {}
        }
        report.records = Some(out.records);
        report.duplicates = Some(out.duplicates);
        report.samples = Some(out.samples);
    } else if req.output.is_some() {
        report.warnings.push(
            Diagnostic::warning(
                codes::DIFF_INVALID_OPTION,
                "--output was not written: the aggregate strategy does not match rows",
            )
            .with_help("pass a key and --full to export differing rows"),
        );
    }
    report.rows.delta = report.rows.candidate as i64 - report.rows.base as i64;
    let unmeasured = match (strategy, &report.records) {
        (_, None) if req.key.columns.is_empty() => {
            Err("the model has no key: rows cannot be matched")
        }
        (_, None) => Err("the aggregate strategy does not match rows"),
        (Strategy::Sampled, _) => Err("the sampled strategy counts rows of a sample only"),
        (_, Some(r)) => Ok(r),
    };
    let changed: Vec<(String, u64)> = report
        .changed_values
        .iter()
        .map(|(k, v)| (k.clone(), v.as_u64().unwrap_or(0)))
        .collect();
    report.policy = evaluate(
        &req.policy,
        &Measured {
            base_rows: report.rows.base,
            records: unmeasured,
            duplicates: report.duplicates.as_ref(),
            changed_values: &changed,
        },
        &req.model,
    );
    Ok(report)
}
