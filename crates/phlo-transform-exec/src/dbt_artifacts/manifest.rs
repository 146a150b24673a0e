//! dbt's `manifest.json` (schema v12) from a compilation: every model a `model` node with its
//! inferred columns (SQL type names), descriptions (`[model.<name>] description`, contract
//! columns' `description`), materialisation, tags, key and incremental strategy; its
//! `depends_on` the compiler's DAG; every source a `source`; every test a `test` node —
//! generated ones as dbt's generic `not_null` / `unique` tests (a key of several columns as
//! `dbt_utils.unique_combination_of_columns`), `tests/*.sql` as singular tests.

use phlo_transform_compiler::schemas::SourceSchema;
use phlo_transform_compiler::{Compilation, ModelSchema, TestKind};
use phlo_transform_project::IncrementalStrategy;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

use super::ids::{DbtRelation, Ids, Relations, DBT_VERSION};
use super::types::sql_type;

pub(crate) const MANIFEST_SCHEMA: &str = "https://schemas.getdbt.com/dbt/manifest/v12.json";

/// What both documents' `metadata` say about the invocation.
pub(crate) struct Invocation<'a> {
    pub invocation_id: &'a str,
    pub started_at: &'a str,
    pub generated_at: &'a str,
}

/// The `metadata` both documents start with; the manifest's also names the project.
pub(crate) fn metadata(schema: &str, invocation: &Invocation<'_>) -> Map<String, Value> {
    let value = json!({
        "dbt_schema_version": schema,
        "dbt_version": DBT_VERSION,
        "generated_at": invocation.generated_at,
        "invocation_id": invocation.invocation_id,
        "invocation_started_at": invocation.started_at,
        "env": {},
    });
    match value {
        Value::Object(fields) => fields,
        _ => unreachable!("a JSON object literal"),
    }
}

fn manifest_metadata(ids: &Ids, relations: &Relations, invocation: &Invocation<'_>) -> Value {
    let mut fields = metadata(MANIFEST_SCHEMA, invocation);
    let project_id = hex(&Sha256::digest(ids.project.as_bytes()))[..32].to_string();
    for (key, value) in [
        ("project_name", json!(ids.project)),
        ("project_id", json!(project_id)),
        ("user_id", Value::Null),
        ("send_anonymous_usage_stats", json!(false)),
        ("adapter_type", json!(relations.adapter)),
    ] {
        fields.insert(key.into(), value);
    }
    Value::Object(fields)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn checksum(text: &str) -> Value {
    json!({"name": "sha256", "checksum": hex(&Sha256::digest(text.as_bytes()))})
}

/// The manifest document.
pub(crate) fn manifest(
    c: &Compilation,
    ids: &Ids,
    relations: &Relations,
    invocation: &Invocation<'_>,
) -> Value {
    let mut nodes = Map::new();
    let mut sources = Map::new();
    let mut parents: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for s in &c.workspace.sources {
        let id = ids.source(&s.name);
        parents.insert(id.clone(), Vec::new());
        sources.insert(id, source_node(c, ids, relations, s));
    }
    for i in 0..c.models.len() {
        let node = model_node(c, ids, relations, i);
        let id = ids.model(i);
        parents.insert(id.clone(), depends_on(&node));
        nodes.insert(id, node);
    }
    for t in &c.tests {
        let node = test_node(c, ids, relations, t);
        let id = ids.test(&t.name);
        parents.insert(id.clone(), depends_on(&node));
        nodes.insert(id, node);
    }
    let mut children: BTreeMap<String, Vec<String>> =
        parents.keys().map(|k| (k.clone(), Vec::new())).collect();
    for (child, ps) in &parents {
        for p in ps {
            children.entry(p.clone()).or_default().push(child.clone());
        }
    }
    json!({
        "metadata": manifest_metadata(ids, relations, invocation),
        "nodes": nodes,
        "sources": sources,
        "macros": {},
        "docs": {},
        "exposures": {},
        "metrics": {},
        "groups": {},
        "selectors": {},
        "disabled": {},
        "parent_map": parents,
        "child_map": children,
        "group_map": {},
        "saved_queries": {},
        "semantic_models": {},
        "unit_tests": {},
    })
}

fn depends_on(node: &Value) -> Vec<String> {
    node["depends_on"]["nodes"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// The `config.materialized`, `incremental_strategy` and strategy settings of a model.
fn incremental_config(strategy: Option<&IncrementalStrategy>, config: &mut Map<String, Value>) {
    let Some(strategy) = strategy else { return };
    let (name, setting): (&str, Option<(&str, Value)>) = match strategy {
        IncrementalStrategy::Append => ("append", None),
        IncrementalStrategy::Full => return,
        IncrementalStrategy::Key { columns } => ("merge", Some(("unique_key", json!(columns)))),
        IncrementalStrategy::Partition { columns } => {
            ("insert_overwrite", Some(("partition_by", json!(columns))))
        }
        IncrementalStrategy::Window { column } => {
            ("microbatch", Some(("event_time", json!(column))))
        }
    };
    config.insert("incremental_strategy".into(), json!(name));
    if let Some((key, value)) = setting {
        config.insert(key.into(), value);
    }
}

fn model_node(c: &Compilation, ids: &Ids, relations: &Relations, i: usize) -> Value {
    let (m, file) = (&c.models[i], &c.workspace.models[i]);
    let relation = DbtRelation::of(&relations.models[i]);
    let contract = c.contracts.get(&i);
    let description = |column: &str| {
        contract
            .and_then(|k| k.columns.iter().find(|col| col.name == column))
            .and_then(|col| col.description.clone())
            .unwrap_or_default()
    };
    let mut columns = Map::new();
    if let Some(cols) = m.schema.as_ref().and_then(ModelSchema::columns) {
        for col in cols {
            columns.insert(
                col.name.clone(),
                json!({
                    "name": col.name,
                    "description": description(&col.name),
                    "meta": {"arrow_type": col.data_type, "nullable": col.nullable},
                    "data_type": sql_type(&col.arrow_type),
                    "constraints": if col.nullable { json!([]) } else { json!([{"type": "not_null"}]) },
                    "quote": null,
                    "tags": [],
                }),
            );
        }
    }
    let tags = &file.config.tags.value;
    let key = &file.config.key.value;
    let mut config = Map::new();
    config.insert("enabled".into(), json!(true));
    config.insert("alias".into(), json!(relation.alias));
    config.insert("schema".into(), json!(relation.schema));
    config.insert("database".into(), json!(relation.database));
    config.insert("tags".into(), json!(tags));
    config.insert("meta".into(), json!({}));
    config.insert("materialized".into(), json!(m.materialization.as_str()));
    config.insert(
        "unique_key".into(),
        if key.is_empty() {
            Value::Null
        } else {
            json!(key)
        },
    );
    incremental_config(file.config.incremental.value.as_ref(), &mut config);
    config.insert("on_schema_change".into(), json!("ignore"));
    config.insert(
        "contract".into(),
        json!({"enforced": contract.is_some_and(|k| k.enforced), "alias_types": true}),
    );
    config.insert("access".into(), json!("protected"));
    let ephemeral = m.materialization == phlo_transform_project::Materialization::Ephemeral;
    let upstream: Vec<String> = m.upstream.iter().map(|&u| ids.model(u)).collect();
    let mut depends: Vec<String> = upstream.clone();
    depends.extend(m.sources.iter().map(|s| ids.source(s)));
    let mut fqn = vec![ids.project.clone()];
    let segments: Vec<&str> = m.name.as_str().split('.').collect();
    fqn.extend(segments[..segments.len() - 1].iter().map(|s| s.to_string()));
    fqn.push(ids.model_name(i).to_string());
    let mut meta = Map::new();
    if let Some(owner) = &file.config.owner.value {
        meta.insert("owner".into(), json!(owner));
    }
    meta.insert("phlo_name".into(), json!(m.name.as_str()));
    if let Some(v) = &m.version {
        meta.insert("phlo_version".into(), json!(v.version));
    }
    json!({
        "database": relation.database,
        "schema": relation.schema,
        "name": ids.model_name(i),
        "resource_type": "model",
        "package_name": ids.project,
        "path": m.path,
        "original_file_path": m.path,
        "unique_id": ids.model(i),
        "fqn": fqn,
        "alias": relation.alias,
        "checksum": checksum(&file.text),
        "config": config,
        "tags": tags,
        "description": contract.and_then(|k| k.description.clone()).unwrap_or_default(),
        "columns": columns,
        "meta": meta,
        "group": null,
        "docs": {"show": true, "node_color": null},
        "patch_path": null,
        "build_path": null,
        "unrendered_config": {},
        "relation_name": if ephemeral { Value::Null } else { json!(relation.relation_name) },
        "raw_code": file.text,
        "language": "sql",
        "refs": m.upstream.iter().map(|&u| json!({"name": ids.model_name(u), "package": null, "version": null})).collect::<Vec<_>>(),
        "sources": m.sources.iter().map(|s| { let (a, b) = Ids::source_parts(s); json!([a, b]) }).collect::<Vec<_>>(),
        "metrics": [],
        "depends_on": {"macros": [], "nodes": depends},
        "compiled_path": null,
        "compiled": m.sql.is_some(),
        "compiled_code": m.sql.as_deref(),
        "extra_ctes_injected": true,
        "extra_ctes": [],
        "contract": {"enforced": contract.is_some_and(|k| k.enforced), "alias_types": true, "checksum": null},
        "access": "protected",
        "constraints": [],
        "version": null,
        "latest_version": null,
        "deprecation_date": null,
        "primary_key": key,
    })
}

fn test_node(
    c: &Compilation,
    ids: &Ids,
    relations: &Relations,
    t: &phlo_transform_compiler::CompiledTest,
) -> Value {
    let name = Ids::test_name(&t.name);
    let attached = t.targets.first().copied();
    let relation = attached.map(|i| DbtRelation::of(&relations.models[i]));
    let schema = relation
        .as_ref()
        .map(|r| r.schema.clone())
        .unwrap_or_default();
    let database = relation.as_ref().and_then(|r| r.database.clone());
    let refs: Vec<Value> = t
        .targets
        .iter()
        .map(|&i| json!({"name": ids.model_name(i), "package": null, "version": null}))
        .collect();
    let nodes: Vec<String> = t.targets.iter().map(|&i| ids.model(i)).collect();
    let compiled = t.query.to_string();
    let model_ref =
        attached.map(|i| format!("{{{{ get_where_subquery(ref('{}')) }}}}", ids.model_name(i)));
    // Generic tests in dbt's own terms; a singular test is its file.
    let (path, raw_code, column_name, test_metadata, macro_name) = match &t.kind {
        TestKind::NotNull { column } => (
            attached
                .map(|i| c.models[i].path.clone())
                .unwrap_or_default(),
            "{{ test_not_null(**_dbt_generic_test_kwargs) }}".to_string(),
            Some(column.clone()),
            Some(
                json!({"name": "not_null", "kwargs": {"column_name": column, "model": model_ref}, "namespace": null}),
            ),
            Some("macro.dbt.test_not_null"),
        ),
        TestKind::Unique { columns } if columns.len() == 1 => (
            attached
                .map(|i| c.models[i].path.clone())
                .unwrap_or_default(),
            "{{ test_unique(**_dbt_generic_test_kwargs) }}".to_string(),
            Some(columns[0].clone()),
            Some(
                json!({"name": "unique", "kwargs": {"column_name": columns[0], "model": model_ref}, "namespace": null}),
            ),
            Some("macro.dbt.test_unique"),
        ),
        TestKind::Unique { columns } => (
            attached
                .map(|i| c.models[i].path.clone())
                .unwrap_or_default(),
            "{{ dbt_utils.test_unique_combination_of_columns(**_dbt_generic_test_kwargs) }}"
                .to_string(),
            None,
            Some(
                json!({"name": "unique_combination_of_columns", "kwargs": {"combination_of_columns": columns, "model": model_ref}, "namespace": "dbt_utils"}),
            ),
            Some("macro.dbt_utils.test_unique_combination_of_columns"),
        ),
        TestKind::Custom { path } => (
            path.clone(),
            c.workspace
                .tests
                .iter()
                .find(|f| &f.path == path)
                .map(|f| f.text.clone())
                .unwrap_or_else(|| compiled.clone()),
            None,
            None,
            None,
        ),
    };
    let mut node = json!({
        "database": database,
        "schema": schema,
        "name": name,
        "resource_type": "test",
        "package_name": ids.project,
        "path": path,
        "original_file_path": path,
        "unique_id": ids.test(&t.name),
        "fqn": [ids.project.clone(), name.clone()],
        "alias": name,
        "checksum": checksum(&raw_code),
        "config": {
            "enabled": true, "alias": null, "schema": "dbt_test__audit", "database": null,
            "tags": [], "meta": {}, "group": null, "materialized": "test",
            "severity": "ERROR", "store_failures": null, "store_failures_as": null,
            "where": null, "limit": null, "fail_calc": "count(*)",
            "warn_if": "!= 0", "error_if": "!= 0",
        },
        "tags": [],
        "description": "",
        "columns": {},
        "meta": {"phlo_name": t.name},
        "group": null,
        "docs": {"show": true, "node_color": null},
        "patch_path": null,
        "build_path": null,
        "unrendered_config": {},
        "relation_name": null,
        "raw_code": raw_code,
        "language": "sql",
        "refs": refs,
        "sources": [],
        "metrics": [],
        "depends_on": {"macros": macro_name.into_iter().collect::<Vec<_>>(), "nodes": nodes},
        "compiled_path": null,
        "compiled": true,
        "compiled_code": compiled,
        "extra_ctes_injected": true,
        "extra_ctes": [],
        "contract": {"enforced": false, "alias_types": true, "checksum": null},
    });
    if let Some(metadata) = test_metadata {
        let fields = node.as_object_mut().expect("a test node is an object");
        fields.insert("column_name".into(), json!(column_name));
        fields.insert(
            "file_key_name".into(),
            json!(attached.map(|i| format!("models.{}", ids.model_name(i)))),
        );
        fields.insert(
            "attached_node".into(),
            json!(attached.map(|i| ids.model(i))),
        );
        fields.insert("test_metadata".into(), metadata);
    }
    node
}

fn source_node(
    c: &Compilation,
    ids: &Ids,
    relations: &Relations,
    s: &phlo_transform_project::SourceDecl,
) -> Value {
    let (source_name, table) = Ids::source_parts(&s.name);
    let relation = relations.sources.get(&s.name).map(DbtRelation::of);
    let mut columns = Map::new();
    match c.catalog.sources.get(&s.name).map(|st| &st.schema) {
        Some(SourceSchema::Known(schema)) => {
            for f in schema.fields() {
                columns.insert(
                    f.name().clone(),
                    json!({"name": f.name(), "description": "", "meta": {}, "data_type": sql_type(f.data_type()), "constraints": [], "quote": null, "tags": []}),
                );
            }
        }
        _ => {
            for (name, data_type) in &s.columns {
                columns.insert(
                    name.clone(),
                    json!({"name": name, "description": "", "meta": {}, "data_type": data_type, "constraints": [], "quote": null, "tags": []}),
                );
            }
        }
    }
    let mut meta = Map::new();
    if let Some(owner) = &s.owner {
        meta.insert("owner".into(), json!(owner));
    }
    let format = serde_json::to_value(s.format).unwrap_or(Value::Null);
    json!({
        "database": relation.as_ref().and_then(|r| r.database.clone()),
        "schema": relation.as_ref().map(|r| r.schema.clone()).unwrap_or_else(|| source_name.clone()),
        "name": table,
        "resource_type": "source",
        "package_name": ids.project,
        "path": s.location,
        "original_file_path": s.location,
        "unique_id": ids.source(&s.name),
        "fqn": [ids.project.clone(), source_name.clone(), table.clone()],
        "source_name": source_name,
        "source_description": "",
        "loader": "",
        "identifier": relation.as_ref().map(|r| r.alias.clone()).unwrap_or_else(|| table.clone()),
        "quoting": {"database": null, "schema": null, "identifier": null, "column": null},
        "loaded_at_field": s.freshness.as_ref().and_then(|f| f.timestamp_column.clone()),
        "freshness": null,
        "external": {"location": s.location, "file_format": format},
        "description": s.description.clone().unwrap_or_default(),
        "columns": columns,
        "meta": meta,
        "source_meta": {},
        "tags": [],
        "config": {"enabled": true},
        "patch_path": null,
        "unrendered_config": {},
        "relation_name": relation.as_ref().map(|r| r.relation_name.clone()),
    })
}
