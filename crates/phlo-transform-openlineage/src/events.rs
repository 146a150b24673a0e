//! The event envelope and the standard facets, each stamped with `_producer` and the
//! `_schemaURL` of the facet schema version it was written against (the files vendored in
//! testdata/openlineage/schemas, which the tests validate every event with).

use serde_json::{json, Map, Value};

/// Version of the OpenLineage core schema the events follow.
pub const SPEC_URL: &str = "https://openlineage.io/spec/2-0-2/OpenLineage.json";

/// `producer` and every facet's `_producer`.
pub const PRODUCER: &str = concat!("urn:phlo-transform:", env!("CARGO_PKG_VERSION"));

/// `integration` of the jobType facet.
pub const INTEGRATION: &str = "PHLO_TRANSFORM";

pub fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// The base of every event: `eventTime`, `producer`, `schemaURL` for `kind` (`RunEvent`,
/// `JobEvent`, `DatasetEvent`).
pub fn envelope(kind: &str, event_time: &str) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("eventTime".into(), json!(event_time));
    m.insert("producer".into(), json!(PRODUCER));
    m.insert(
        "schemaURL".into(),
        json!(format!("{SPEC_URL}#/$defs/{kind}")),
    );
    m
}

/// A standard facet: `body` plus `_producer` and `_schemaURL`
/// (`https://openlineage.io/spec/facets/<version>/<Name>.json#/$defs/<Name>`).
pub fn facet(name: &str, version: &str, body: Value) -> Value {
    let mut m = Map::new();
    m.insert("_producer".into(), json!(PRODUCER));
    m.insert(
        "_schemaURL".into(),
        json!(format!(
            "https://openlineage.io/spec/facets/{version}/{name}.json#/$defs/{name}"
        )),
    );
    if let Value::Object(fields) = body {
        m.extend(fields);
    }
    Value::Object(m)
}

/// `schema`: `(name, type)` pairs in column order.
pub fn schema(columns: &[(String, Option<String>)]) -> Value {
    let fields: Vec<Value> = columns
        .iter()
        .enumerate()
        .map(|(i, (name, data_type))| {
            let mut f = json!({ "name": name, "ordinal_position": i + 1 });
            if let Some(t) = data_type {
                f["type"] = json!(t);
            }
            f
        })
        .collect();
    facet("SchemaDatasetFacet", "1-2-0", json!({ "fields": fields }))
}

pub fn job_type() -> Value {
    facet(
        "JobTypeJobFacet",
        "2-0-4",
        json!({ "processingType": "BATCH", "integration": INTEGRATION, "jobType": "MODEL" }),
    )
}

pub fn sql(query: &str, dialect: &str) -> Value {
    facet(
        "SQLJobFacet",
        "1-1-0",
        json!({ "query": query, "dialect": dialect }),
    )
}

pub fn job_documentation(description: &str) -> Value {
    facet(
        "DocumentationJobFacet",
        "1-1-0",
        json!({ "description": description }),
    )
}

pub fn dataset_documentation(description: &str) -> Value {
    facet(
        "DocumentationDatasetFacet",
        "1-1-0",
        json!({ "description": description }),
    )
}

/// The `_schemaURL` of phlo-transform's own freshness facet: a URN, its schema shipped as
/// `docs/openlineage/PhloTransformFreshnessDatasetFacet.json` (a custom facet has no
/// openlineage.io address).
pub const FRESHNESS_FACET_SCHEMA: &str =
    "urn:phlo-transform:openlineage:facets:1-0-0:PhloTransformFreshnessDatasetFacet#/$defs/PhloTransformFreshnessDatasetFacet";

/// The key of the freshness facet in a dataset's `facets` (custom facets carry their
/// producer's prefix).
pub const FRESHNESS_FACET: &str = "phloTransform_freshness";

/// `phloTransform_freshness`: what the written dataset is current as of (freshness clocks),
/// RFC 3339 in UTC, or null when unknown.
pub fn freshness(current_as_of: Option<&str>) -> Value {
    json!({
        "_producer": PRODUCER,
        "_schemaURL": FRESHNESS_FACET_SCHEMA,
        "currentAsOf": current_as_of,
    })
}

/// `parent`: the phlo run a model's run belongs to (also its root).
pub fn parent(namespace: &str, job: &str, run_id: &str) -> Value {
    let run = json!({ "runId": run_id });
    let job = json!({ "namespace": namespace, "name": job });
    facet(
        "ParentRunFacet",
        "1-2-0",
        json!({ "run": run, "job": job, "root": { "run": run, "job": job } }),
    )
}

pub fn error_message(message: &str) -> Value {
    facet(
        "ErrorMessageRunFacet",
        "1-0-1",
        json!({ "message": message, "programmingLanguage": "SQL" }),
    )
}

pub fn output_statistics(rows: u64) -> Value {
    facet(
        "OutputStatisticsOutputDatasetFacet",
        "1-0-2",
        json!({ "rowCount": rows }),
    )
}

/// `lifecycleStateChange` RENAME from `(namespace, name)`.
pub fn renamed_from(namespace: &str, name: &str) -> Value {
    facet(
        "LifecycleStateChangeDatasetFacet",
        "1-0-1",
        json!({
            "lifecycleStateChange": "RENAME",
            "previousIdentifier": { "namespace": namespace, "name": name },
        }),
    )
}
