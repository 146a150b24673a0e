//! dbt's `run_results.json` (schema v6) from a run report: one result per model and test the
//! run planned, its status in dbt's words, timing, rows and failures.
//!
//! Statuses: a model `passed` is `success`; `failed` and `cancelled` are `error` (the message
//! says which); `skipped` (up to date) and `cached` are `no-op`: nothing was done, the
//! relation is current (dbt v2's `reused` says the same, but dbt-core 1.x's readers refuse
//! it); `blocked` is `skipped`, as dbt says of a node whose upstream failed. A
//! test `passed` is `pass`, `cached` `pass` (it passed at these versions), `failed` `fail`
//! with the violations as `failures`, `error` `error`, `blocked` and `cancelled` `skipped`.

use phlo_transform_compiler::Compilation;
use serde_json::{json, Value};
use std::collections::HashMap;

use super::ids::{DbtRelation, Ids, Relations};
use super::manifest::{metadata, Invocation};
use crate::{ModelResult, RunReport, TestResult};

pub(crate) const RUN_RESULTS_SCHEMA: &str = "https://schemas.getdbt.com/dbt/run-results/v6.json";

fn model_status(status: &str) -> &'static str {
    match status {
        "passed" => "success",
        "skipped" | "cached" => "no-op",
        "blocked" => "skipped",
        _ => "error",
    }
}

fn test_status(status: &str) -> &'static str {
    match status {
        "passed" | "cached" => "pass",
        "failed" => "fail",
        "blocked" | "cancelled" => "skipped",
        _ => "error",
    }
}

fn seconds(ms: Option<u64>) -> f64 {
    ms.map_or(0.0, |ms| ms as f64 / 1000.0)
}

fn timing(started: Option<&str>, finished: Option<&str>) -> Value {
    match (started, finished) {
        (Some(s), Some(f)) => json!([
            {"name": "compile", "started_at": s, "completed_at": s},
            {"name": "execute", "started_at": s, "completed_at": f},
        ]),
        _ => json!([]),
    }
}

fn model_result(
    c: &Compilation,
    ids: &Ids,
    relations: &Relations,
    index: &HashMap<&str, usize>,
    m: &ModelResult,
) -> Option<Value> {
    let &i = index.get(m.name.as_str())?;
    let message = match (&m.error, m.status.as_str()) {
        (Some(e), _) => Some(format!("{}: {}", e.code, e.message)),
        (None, "skipped" | "cached") => Some(
            m.outdated
                .clone()
                .unwrap_or_else(|| "up to date: not rebuilt".to_string()),
        ),
        (None, "passed") => m.write.clone(),
        (None, other) => Some(other.to_string()),
    };
    let mut adapter_response = serde_json::Map::new();
    if let Some(rows) = m.rows {
        adapter_response.insert("rows_affected".into(), json!(rows));
    }
    if let Some(write) = &m.write {
        adapter_response.insert("_message".into(), json!(write));
    }
    let ephemeral =
        c.models[i].materialization == phlo_transform_project::Materialization::Ephemeral;
    Some(json!({
        "status": model_status(&m.status),
        "timing": timing(m.started_at.as_deref(), m.finished_at.as_deref()),
        "thread_id": "Thread-1",
        "execution_time": seconds(m.duration_ms),
        "adapter_response": adapter_response,
        "message": message,
        "failures": null,
        "unique_id": ids.model(i),
        "compiled": c.models[i].sql.is_some(),
        "compiled_code": c.models[i].sql.as_deref(),
        "relation_name": (!ephemeral).then(|| DbtRelation::of(&relations.models[i]).relation_name),
        "batch_results": null,
    }))
}

fn test_result(c: &Compilation, ids: &Ids, t: &TestResult) -> Option<Value> {
    let compiled = c.tests.iter().find(|ct| ct.name == t.name)?;
    let message = match (&t.error, t.status.as_str()) {
        (Some(e), _) => Some(format!("{}: {}", e.code, e.message)),
        (None, "failed") => Some(format!(
            "Got {} result(s), configured to fail if != 0",
            t.violations.unwrap_or(0)
        )),
        (None, "cached") => Some(
            t.reason
                .clone()
                .unwrap_or_else(|| "cached: passed at these versions".into()),
        ),
        (None, _) => None,
    };
    Some(json!({
        "status": test_status(&t.status),
        "timing": [],
        "thread_id": "Thread-1",
        "execution_time": seconds(t.duration_ms),
        "adapter_response": {},
        "message": message,
        "failures": t.violations,
        "unique_id": ids.test(&t.name),
        "compiled": true,
        "compiled_code": compiled.query.to_string(),
        "relation_name": null,
        "batch_results": null,
    }))
}

/// The run results document of `report`.
pub(crate) fn run_results(
    c: &Compilation,
    ids: &Ids,
    relations: &Relations,
    report: &RunReport,
    command: &str,
    invocation: &Invocation<'_>,
) -> Value {
    let index: HashMap<&str, usize> = c
        .models
        .iter()
        .enumerate()
        .map(|(i, m)| (m.name.as_str(), i))
        .collect();
    let mut results: Vec<Value> = report
        .models
        .iter()
        .filter_map(|m| model_result(c, ids, relations, &index, m))
        .collect();
    results.extend(report.tests.iter().filter_map(|t| test_result(c, ids, t)));
    let elapsed = match (
        chrono::DateTime::parse_from_rfc3339(&report.started_at),
        chrono::DateTime::parse_from_rfc3339(&report.finished_at),
    ) {
        (Ok(s), Ok(f)) => (f - s).num_milliseconds().max(0) as f64 / 1000.0,
        _ => 0.0,
    };
    json!({
        "metadata": metadata(RUN_RESULTS_SCHEMA, invocation),
        "results": results,
        "elapsed_time": elapsed,
        "args": {
            "which": command,
            "phlo_run_id": report.run_id,
            "phlo_plan_id": report.plan_id,
            "phlo_environment": report.environment,
            "phlo_status": report.status,
        },
    })
}
