//! `inspect`: one model, one source, or a model's SQL.

use super::Report;
use phlo_transform_compiler::{Dependency, ModelSchema, SqlChange};
use phlo_transform_exec::inspect::{ModelInspection, ModelSql, SourceInspection};
use std::fmt::Write;

impl Report for ModelInspection<'_> {
    fn human(&self) -> String {
        let mut out = String::new();
        model(&mut out, self).expect("writing to a String cannot fail");
        out
    }
}

fn model(out: &mut String, m: &ModelInspection) -> std::fmt::Result {
    writeln!(out, "Model: {}", m.name)?;
    let pinned = if m.id != m.name {
        format!(" (pinned @id {})", m.id)
    } else {
        String::new()
    };
    writeln!(out, "ID: {}{pinned}", m.uri)?;
    writeln!(out, "Path: {}\n", m.path)?;
    writeln!(out, "Materialisation: {}", m.materialization)?;
    if let (Some(r), Some(a)) = (&m.relation, &m.adapter) {
        writeln!(out, "Relation: {r} ({a})")?;
    }
    if !m.key.is_empty() {
        writeln!(out, "Key: {}", m.key.join(", "))?;
    }
    if let Some(config) = m.config {
        writeln!(out, "\nConfiguration:")?;
        let rows = config.rows();
        let key_width = rows.iter().map(|(k, _, _)| k.len()).max().unwrap_or(0);
        let value_width = rows
            .iter()
            .map(|(_, v, _)| v.chars().count())
            .max()
            .unwrap_or(0);
        for (key, value, origin) in rows {
            writeln!(
                out,
                "  {key:<key_width$}  {value:<value_width$}  from {}",
                origin.describe()
            )?;
        }
    }
    match m.schema {
        Some(ModelSchema::Known { columns, .. }) => {
            writeln!(out, "\nColumns:")?;
            let width = columns.iter().map(|c| c.name.len()).max().unwrap_or(0);
            let type_width = columns
                .iter()
                .map(|c| c.data_type.len() + if c.nullable { 0 } else { 9 })
                .max()
                .unwrap_or(0);
            for col in columns {
                let ty = format!(
                    "{}{}",
                    col.data_type,
                    if col.nullable { "" } else { " NOT NULL" }
                );
                let from = m
                    .column_lineage
                    .iter()
                    .find(|s| s.name == col.name)
                    .filter(|s| !s.direct.is_empty())
                    .map(|s| format!("  ← {}", s.direct.join(", ")))
                    .unwrap_or_default();
                writeln!(out, "  {:<width$}  {ty:<type_width$}{from}", col.name)?;
            }
        }
        Some(ModelSchema::Unknown { reason }) => writeln!(out, "\nColumns: unknown ({reason})")?,
        None => writeln!(
            out,
            "\nColumns: not inferred (the model or an upstream has errors)"
        )?,
    }
    writeln!(out, "\nDepends on:")?;
    for d in &m.depends_on {
        match d {
            Dependency::Model(n) => writeln!(out, "  {n}")?,
            Dependency::Source(n) => writeln!(out, "  {n} (source)")?,
        }
    }
    if m.depends_on.is_empty() {
        writeln!(out, "  (nothing)")?;
    }
    writeln!(out, "\nUsed by:")?;
    for u in &m.used_by {
        writeln!(out, "  {u}")?;
    }
    if m.used_by.is_empty() {
        writeln!(out, "  (nothing)")?;
    }
    if !m.tests.is_empty() {
        writeln!(out, "\nTests:")?;
        for t in &m.tests {
            writeln!(out, "  {t}")?;
        }
    }
    let short = |v: Option<&String>| {
        v.map(|s| s[..12.min(s.len())].to_string())
            .unwrap_or_else(|| "-".into())
    };
    writeln!(out, "\nState:")?;
    writeln!(out, "  desired: {}", short(m.state.desired.as_ref()))?;
    writeln!(out, "  current: {}", short(m.state.current.as_ref()))?;
    writeln!(out, "  status: {}", m.state.status)?;
    if m.state.current.is_some() {
        writeln!(
            out,
            "  current as of: {}",
            super::as_of(m.state.current_as_of)
        )?;
    }
    if let Some(change) = m.state.sql_change {
        let text = match change {
            SqlChange::None => "none",
            SqlChange::Text => "text only (formatting or comments)",
            SqlChange::Ast => "AST only (same logical plan)",
            SqlChange::Semantic => "semantic",
        };
        writeln!(out, "  SQL change: {text}")?;
    }
    if let Some(identity) = &m.state.output_identity {
        writeln!(out, "  output identity: {identity}")?;
    }
    if let Some(physical) = &m.state.physical_state {
        physical_state(out, physical)?;
    }
    Ok(())
}

/// The recorded physical state: an Iceberg table's snapshot, schema, partition spec and
/// properties; any other adapter's state as JSON.
fn physical_state(out: &mut String, p: &serde_json::Value) -> std::fmt::Result {
    if p["format"] != "iceberg" {
        return writeln!(out, "  physical state: {p}");
    }
    let at = p["snapshot_timestamp_ms"]
        .as_i64()
        .and_then(chrono::DateTime::from_timestamp_millis)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
        .unwrap_or_else(|| "-".into());
    writeln!(
        out,
        "  Iceberg snapshot: {} ({}, {at}; {} in the metadata)",
        p["snapshot_id"],
        p["snapshot_operation"].as_str().unwrap_or("-"),
        p["snapshots"]
    )?;
    writeln!(out, "  Iceberg schema id: {}", p["schema_id"])?;
    let fields: Vec<String> = p["partition_spec"]["fields"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|f| {
            let (transform, source) = (
                f["transform"].as_str().unwrap_or("?"),
                f["source"].as_str().unwrap_or("?"),
            );
            if transform == "identity" {
                source.to_string()
            } else {
                format!("{transform}({source})")
            }
        })
        .collect();
    let fields = if fields.is_empty() {
        "unpartitioned".to_string()
    } else {
        fields.join(", ")
    };
    writeln!(
        out,
        "  Iceberg partition spec: {} ({fields})",
        p["partition_spec"]["spec_id"]
    )?;
    let properties: Vec<String> = p["properties"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
        .collect();
    writeln!(out, "  Iceberg properties: {}", properties.join(", "))?;
    writeln!(
        out,
        "  Iceberg metadata: {}",
        p["metadata_location"].as_str().unwrap_or("-")
    )
}

impl Report for SourceInspection<'_> {
    fn human(&self) -> String {
        let mut out = String::new();
        source(&mut out, self).expect("writing to a String cannot fail");
        out
    }
}

fn source(out: &mut String, s: &SourceInspection) -> std::fmt::Result {
    writeln!(out, "Source: {}", s.name)?;
    writeln!(out, "Location: {}", s.location)?;
    let format = serde_json::to_value(s.format).expect("serialises");
    writeln!(out, "Format: {}", format.as_str().unwrap_or("?"))?;
    writeln!(out, "State: {}", s.state.unwrap_or("unreadable"))?;
    if s.state.is_some() {
        writeln!(out, "Current as of: {}", super::as_of(s.current_as_of))?;
    }
    match &s.columns {
        Some(cols) => {
            writeln!(out, "\nColumns:")?;
            let width = cols.iter().map(|c| c.name.len()).max().unwrap_or(0);
            for c in cols {
                writeln!(out, "  {:<width$}  {}", c.name, c.data_type)?;
            }
        }
        None => writeln!(out, "\nColumns: unknown")?,
    }
    writeln!(out, "\nUsed by:")?;
    for u in &s.used_by {
        writeln!(out, "  {u}")?;
    }
    if s.used_by.is_empty() {
        writeln!(out, "  (nothing)")?;
    }
    Ok(())
}

impl Report for ModelSql<'_> {
    fn human(&self) -> String {
        self.statements.iter().map(|s| format!("{s};\n")).collect()
    }
}
