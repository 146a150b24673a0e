//! Data diff over Arrow (SPEC §52–54): two sides as DataFusion DataFrames, streamed as
//! record batches and compared on a key (or by aggregates when there is none), into a
//! serialisable report with a schema difference, per-column changed-value counts, samples,
//! duplicate keys and the verdict of the model's diff policy.
//!
//! Strategies (`Strategy`): `full` (every row), `partition` (key-hash partitions with
//! count + checksum, only differing ones compared), `aggregate` (per-column statistics),
//! `sampled` (a deterministic key-hash sample, the same keys on both sides).

mod aggregate;
mod checksum;
mod chunks;
mod compare;
mod hashing;
mod index;
pub mod infer;
mod keyed;
mod keys;
mod options;
mod output;
pub mod policy;
mod pushdown;
mod report;
mod run;
mod schema;
mod values;

pub use aggregate::{Aggregates, ColumnAggregates};
pub use infer::{infer_key, InferredKey};
pub use keyed::{DuplicateCounts, Duplicates, RecordSamples, Records};
pub use options::{DiffOptions, Strategy};
pub use policy::{DiffPolicy, PolicyResult};
pub use pushdown::{NanSemantics, PushdownEngine};
pub use report::{DiffReport, KeySource, RowCounts, SideReport};
pub use run::{diff, DiffRequest, KeyChoice, SideInput};
pub use schema::SchemaDiff;
