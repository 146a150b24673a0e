use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunRecord {
    pub run_id: String,
    pub plan_id: String,
    pub environment: String,
    pub command: String,
    /// running, passed, failed, cancelled.
    pub status: String,
    /// Monotonic per run; orders materialisation records and Delta application transactions.
    pub generation: i64,
    pub started_at: String,
    pub finished_at: Option<String>,
    /// The run a `run --retry-failed` run continues.
    #[serde(default)]
    pub continued_from: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeRecord {
    pub node: String,
    /// `model` or `test`.
    pub kind: String,
    pub status: String,
    pub attempt: i64,
    pub version: Option<String>,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    pub duration_ms: Option<i64>,
    pub rows: Option<i64>,
    pub error_code: Option<String>,
    pub error_message: Option<String>,
}

/// One attempt of one node (SPEC §65): its outcome and, when it failed, the structured
/// failure. Written as each attempt ends, before any retry backoff.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttemptRecord {
    pub node: String,
    /// `model` or `test`.
    pub kind: String,
    /// 1-based.
    pub attempt: i64,
    /// passed, failed, cancelled.
    pub status: String,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    pub duration_ms: Option<i64>,
    /// adapter, sql, test, timeout, cancelled, dependency, state, internal.
    pub error_category: Option<String>,
    pub error_code: Option<String>,
    pub error_message: Option<String>,
    pub retryable: bool,
    /// The warehouse queries the attempt ran, with the engine's statistics (Trino; empty for
    /// engines that report none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub queries: Vec<QueryRecord>,
}

/// One warehouse query of an attempt as the engine reported it when it ended (SPEC §68).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueryRecord {
    /// The engine's query id (`20261202_071501_00012_abcde`).
    pub query_id: String,
    /// Rows and bytes the query read.
    pub rows: u64,
    pub bytes: u64,
    pub cpu_ms: u64,
    pub wall_ms: u64,
    /// Rows the statement wrote (`CREATE TABLE … AS`, `INSERT`, `MERGE`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub written_rows: Option<u64>,
}

/// The version of a model that is physically materialised in an environment.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MaterializedVersion {
    pub environment: String,
    pub model_id: String,
    pub model_name: String,
    pub version: String,
    pub sql_hash: String,
    pub config_hash: String,
    pub upstream: BTreeMap<String, String>,
    pub sources: BTreeMap<String, String>,
    pub materialization: String,
    pub relation: String,
    pub run_id: String,
    pub generation: i64,
    pub materialized_at: String,
    /// sha256 of the model file's text (classifies formatting-only edits).
    pub text_hash: Option<String>,
    /// Fingerprint of the model's logical plan (classifies AST-only edits).
    pub plan_hash: Option<String>,
    /// The columns written, when the schema was known (classifies schema changes).
    #[serde(default)]
    pub output_columns: Option<Vec<RecordedColumn>>,
    /// The adapter that wrote it (`local`, `postgres`, …); `None` for records that predate
    /// adapter tracking. Another adapter's record means a rebuild (`adapter_change`, SPEC §39).
    #[serde(default)]
    pub adapter: Option<String>,
    /// The adapter's proof of the written contents after the write (`iceberg:snapshot:…`);
    /// a relation that reports another one now has drifted (`output_drift`, SPEC §39).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_identity: Option<String>,
    /// What the adapter read of the written relation (Iceberg snapshot, schema, partition
    /// spec, properties), as it reports it (SPEC §69).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub physical_state: Option<serde_json::Value>,
    /// The newest source state the written data reflects: the minimum over its inputs of
    /// each source's as-of instant and each upstream model's own `current_as_of`, when the run
    /// wrote it. `None` (JSON `null`): unknown — an input's is unknown, the model reads
    /// nothing, or the record predates freshness clocks.
    #[serde(default)]
    pub current_as_of: Option<AsOf>,
}

/// An instant a dataset is current as of (UTC); JSON and the state write it as RFC 3339.
pub type AsOf = chrono::DateTime<chrono::Utc>;

/// An as-of instant as the state stores it and the reports print it: RFC 3339 in UTC, with
/// the fraction it has (`2026-12-07T12:30:00.123Z`).
pub fn as_of_text(at: AsOf) -> String {
    at.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
}

/// A stored as-of instant; `None` for text that is none (a hand-edited row reads as unknown).
pub(crate) fn parse_as_of(text: &str) -> Option<AsOf> {
    chrono::DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|t| t.with_timezone(&chrono::Utc))
}

/// A column of a materialisation as written: name, Arrow type as DataFusion prints it
/// (`Int64`, `Decimal128(10, 2)`), nullability.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedColumn {
    pub name: String,
    #[serde(rename = "type")]
    pub data_type: String,
    pub nullable: bool,
}

/// One recent run with its node counts by status (`state runs`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunSummary {
    #[serde(flatten)]
    pub run: RunRecord,
    /// Models by status (`passed`, `failed`, `skipped`, `blocked`, …).
    pub models: BTreeMap<String, i64>,
    /// Tests by status.
    pub tests: BTreeMap<String, i64>,
}

/// One model's result in one run, with that run's identity (`state model`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelRunRecord {
    pub run_id: String,
    pub environment: String,
    pub command: String,
    pub run_status: String,
    pub run_started_at: String,
    pub generation: i64,
    pub node: NodeRecord,
}
