//! The datasets a reference points at, as read by a branch diff ([`super::branch_diff`]) and
//! by a `ref:<name>` side of `diff <model>` ([`crate::diff`]): each a DataFusion frame with its
//! row count and Arrow schema.
//!
//! - On the embedded engine a side is the local engine bound to the reference: a table at
//!   the Delta version the reference reads, or a view.
//! - On Trino + Nessie a side is the reference's branch **at the hash the diff records**: the
//!   model's Iceberg table as Nessie's contents API has it at that commit, read from its
//!   metadata under `local_root` (the reader of the local engine's Iceberg sources), so the
//!   rows compared are exactly those of the hashes the evidence binds, even if the branch
//!   moves meanwhile.

use datafusion::arrow::datatypes::Schema;
use datafusion::prelude::{DataFrame, SessionContext};
use datafusion::sql::TableReference;
use phlo_transform_adapter::branching::{BranchCatalog, TableAt};
use phlo_transform_adapter::snapshot::DeltaAt;
use phlo_transform_adapter::LocalEngine;
use phlo_transform_compiler::Compilation;
use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;
use phlo_transform_state::{Pointer, RefRecord};
use std::sync::Arc;

use super::{local_default_schema, Environments};
use crate::diff::delta_frame;

/// One side of one dataset as read: its frame, row count and schema.
pub(crate) struct Read {
    pub frame: DataFrame,
    /// `None` for a view.
    pub rows: Option<u64>,
    pub schema: Schema,
    pub description: String,
}

/// Where one reference's datasets are read from.
pub(super) enum Side {
    Local(Box<LocalEngine>),
    /// A Nessie branch at one commit.
    Branch {
        branches: Arc<dyn BranchCatalog>,
        ctx: SessionContext,
        hash: String,
    },
}

fn unreadable(model: &str, reference: &str, e: impl std::fmt::Display) -> Diagnostic {
    Diagnostic::error(
        codes::DIFF_UNREADABLE_SIDE,
        format!("`{model}` as `{reference}` reads it cannot be read: {e}"),
    )
    .with_help(format!(
        "`phlo-transform ref show {reference}` shows where it points; `run --ref {reference}` builds it again"
    ))
}

/// D001: the model's table on `branch` at `hash` has no snapshot `id` (`iceberg:<id>`); the
/// help lists its five newest.
fn no_snapshot(
    model: &str,
    branch: &str,
    hash: &str,
    id: i64,
    snapshots: &[(i64, i64)],
) -> Diagnostic {
    let newest = snapshots
        .iter()
        .take(5)
        .map(
            |(id, at)| match chrono::DateTime::from_timestamp_millis(*at) {
                Some(at) => format!("{id} ({})", at.to_rfc3339()),
                None => id.to_string(),
            },
        )
        .collect::<Vec<_>>()
        .join(", ");
    Diagnostic::error(
        codes::DIFF_UNKNOWN_SIDE,
        format!("the table of `{model}` on `{branch}` at {hash} has no snapshot {id}"),
    )
    .with_help(format!("its snapshots, newest first: {newest}"))
}

async fn counted(
    frame: DataFrame,
    name: &str,
    reference: &str,
    description: String,
) -> Result<Read, Diagnostic> {
    let rows = frame
        .clone()
        .count()
        .await
        .map_err(|e| unreadable(name, reference, e.strip_backtrace()))?;
    let schema = frame.schema().as_arrow().clone();
    Ok(Read {
        frame,
        rows: Some(rows as u64),
        schema,
        description,
    })
}

impl Side {
    /// The dataset `p` of `reference` as this side reads it; on a branch, at Iceberg
    /// `snapshot` when given (the embedded engine's tables are Delta tables: `diff` refuses an
    /// Iceberg snapshot there before reading).
    pub(super) async fn read(
        &self,
        reference: &str,
        p: &Pointer,
        snapshot: Option<i64>,
    ) -> Result<Read, Diagnostic> {
        let name = p.model_name.as_str();
        debug_assert!(
            snapshot.is_none() || matches!(self, Side::Branch { .. }),
            "Iceberg snapshots are read on branches only"
        );
        match self {
            Side::Local(engine) if p.kind == "view" => {
                let frame = engine
                    .session()
                    .table(TableReference::bare(engine.relation_name(name)))
                    .await
                    .map_err(|e| unreadable(name, reference, e.strip_backtrace()))?;
                let schema = frame.schema().as_arrow().clone();
                Ok(Read {
                    frame,
                    rows: None,
                    schema,
                    description: format!("{name} in `{reference}` (view)"),
                })
            }
            Side::Local(engine) => {
                let (frame, version) = delta_frame(engine, name, DeltaAt::Latest, "").await?;
                let description = format!(
                    "{name} in `{reference}` (Delta version {version} of {})",
                    p.location
                );
                counted(frame, name, reference, description).await
            }
            Side::Branch {
                branches,
                ctx,
                hash,
            } => {
                let branch = branches.branch_of(reference);
                let at = branches
                    .table_at(reference, hash, name, snapshot)
                    .await
                    .map_err(|e| unreadable(name, reference, e.message))?;
                let table = match at {
                    TableAt::Found(table) => table,
                    TableAt::Missing => {
                        return Err(unreadable(
                            name,
                            reference,
                            format!("Nessie branch `{branch}` has no table at {hash}"),
                        ))
                    }
                    TableAt::NoSnapshot { id, snapshots } => {
                        return Err(no_snapshot(name, &branch, hash, id, &snapshots))
                    }
                };
                let frame = ctx
                    .read_table(table.provider)
                    .map_err(|e| unreadable(name, reference, e.strip_backtrace()))?;
                let description = format!(
                    "{name} in `{reference}` (Iceberg snapshot {} of {} on branch `{branch}` at {hash})",
                    table.snapshot_id, table.key
                );
                counted(frame, name, reference, description).await
            }
        }
    }
}

impl Environments {
    /// The side reading reference `r` (at `r.hash` on branches), and the relations it could
    /// not register.
    pub(super) async fn open_side(
        &self,
        c: &Compilation,
        r: &RefRecord,
    ) -> Result<(Side, Vec<Diagnostic>), Diagnostic> {
        if let Some(branches) = &self.branches {
            let side = Side::Branch {
                branches: branches.clone(),
                ctx: SessionContext::new(),
                hash: r.hash.clone(),
            };
            return Ok((side, Vec::new()));
        }
        let schema = local_default_schema(c);
        let binding = self.bind(Some(&r.name), schema.as_deref()).await?;
        let (engine, problems) = binding.open_local(c).await;
        Ok((
            Side::Local(Box::new(engine)),
            phlo_transform_adapter::unreadable_relations(problems),
        ))
    }

    /// Model `index`'s dataset as reference `name` points at it (on branches, at the head
    /// Nessie has now; at Iceberg `snapshot` of its table when given), and the relations the
    /// side could not register. D001 when the reference has no dataset of the model.
    pub(crate) async fn read_model(
        &self,
        c: &Compilation,
        index: usize,
        name: &str,
        snapshot: Option<i64>,
    ) -> Result<(Read, Vec<Diagnostic>), Diagnostic> {
        let reference = self.get(name).await?;
        let model = &c.models[index];
        let pointer = reference.pointers.get(&model.id).ok_or_else(|| {
            Diagnostic::error(
                codes::DIFF_UNKNOWN_SIDE,
                format!(
                    "reference `{name}` has no dataset of `{}`",
                    model.name.as_str()
                ),
            )
            .with_help(format!(
                "`phlo-transform run --ref {name} -s {}` builds it there",
                model.name.as_str()
            ))
        })?;
        let (side, problems) = self.open_side(c, &reference).await?;
        Ok((side.read(name, pointer, snapshot).await?, problems))
    }
}
