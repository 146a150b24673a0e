//! Source schemas, read without a query engine: Parquet footers, CSV headers with type
//! inference over the first rows, the Delta log's latest `metaData.schemaString`, and the
//! current schema of an Iceberg metadata.json. A schema that cannot be read is `Unknown` with
//! the reason; its readers are then typed `unknown`, never given a false error.

use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use datafusion::parquet::arrow::arrow_reader::ArrowReaderMetadata;
use phlo_transform_lakehouse::delta_log;
use phlo_transform_project::SourceFormat;
use serde_json::Value;
use std::path::Path;
use std::sync::Arc;

/// The schema of a source, or why it is not known.
#[derive(Clone, Debug)]
pub enum SourceSchema {
    Known(SchemaRef),
    Unknown(String),
}

/// The schema of the data at `path`; declared columns are used when there is no data or its
/// schema cannot be read.
pub fn read_schema(
    format: SourceFormat,
    path: &Path,
    table_dir: &Path,
    declared: &[(String, String)],
) -> SourceSchema {
    let result = match format {
        SourceFormat::Parquet => parquet_schema(path),
        SourceFormat::Csv => csv_schema(path),
        SourceFormat::Delta => delta_schema(table_dir),
        SourceFormat::Iceberg => iceberg_schema(path),
        SourceFormat::Declared => Err("no data location".to_string()),
    };
    or_declared(result, declared)
}

/// `result` when it is a schema; else the declared columns, when there are some.
pub(crate) fn or_declared(
    result: Result<Schema, String>,
    declared: &[(String, String)],
) -> SourceSchema {
    match result {
        Ok(schema) => SourceSchema::Known(Arc::new(schema)),
        Err(_) if !declared.is_empty() => match declared_schema(declared) {
            Ok(schema) => SourceSchema::Known(Arc::new(schema)),
            Err(reason) => SourceSchema::Unknown(reason),
        },
        Err(reason) => SourceSchema::Unknown(reason),
    }
}

fn declared_schema(columns: &[(String, String)]) -> Result<Schema, String> {
    let fields = columns
        .iter()
        .map(|(name, ty)| {
            crate::types::sql_type(ty)
                .map(|t| Field::new(name, t, true))
                .ok_or_else(|| format!("declared column `{name}` has unknown type `{ty}`"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Schema::new(fields))
}

fn parquet_schema(path: &Path) -> Result<Schema, String> {
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let meta = ArrowReaderMetadata::load(&file, Default::default())
        .map_err(|e| format!("invalid Parquet footer: {e}"))?;
    Ok(meta.schema().as_ref().clone())
}

fn csv_schema(path: &Path) -> Result<Schema, String> {
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let (schema, _) = datafusion::arrow::csv::reader::Format::default()
        .with_header(true)
        .infer_schema(file, Some(1000))
        .map_err(|e| format!("cannot infer the CSV schema: {e}"))?;
    Ok(schema)
}

/// The newest `metaData` action in the JSON log (tables whose log was compacted into a
/// checkpoint without later JSON commits carrying metadata are reported unknown).
fn delta_schema(dir: &Path) -> Result<Schema, String> {
    let commits = delta_log::commits(dir).map_err(|e| e.to_string())?;
    for commit in commits.iter().rev() {
        let text = std::fs::read_to_string(&commit.path).map_err(|e| e.to_string())?;
        for line in text.lines() {
            let action: Value =
                serde_json::from_str(line).map_err(|e| format!("invalid Delta log entry: {e}"))?;
            if let Some(s) = action
                .pointer("/metaData/schemaString")
                .and_then(Value::as_str)
            {
                let schema: Value =
                    serde_json::from_str(s).map_err(|e| format!("invalid Delta schema: {e}"))?;
                return struct_fields(&schema, delta_type);
            }
        }
    }
    Err("no metaData action in the JSON log (checkpointed tables are not read yet)".into())
}

fn iceberg_schema(metadata: &Path) -> Result<Schema, String> {
    let text = std::fs::read_to_string(metadata).map_err(|e| e.to_string())?;
    let doc: Value =
        serde_json::from_str(&text).map_err(|e| format!("invalid metadata.json: {e}"))?;
    iceberg_metadata_schema(&doc)
}

/// The current schema of Iceberg table metadata (a metadata.json file's content, or the
/// `metadata` a REST catalog answers with).
pub(crate) fn iceberg_metadata_schema(doc: &Value) -> Result<Schema, String> {
    let current = doc
        .get("current-schema-id")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let schema = doc
        .get("schemas")
        .and_then(Value::as_array)
        .and_then(|all| {
            all.iter()
                .find(|s| s.get("schema-id").and_then(Value::as_i64) == Some(current))
        })
        .or_else(|| doc.get("schema"))
        .ok_or("metadata.json has no current schema")?;
    struct_fields(schema, iceberg_type)
}

/// `{"fields": [{"name", "type", "nullable" | "required"}]}` → Arrow fields.
fn struct_fields(
    schema: &Value,
    map: fn(&Value) -> Result<DataType, String>,
) -> Result<Schema, String> {
    let fields = schema
        .get("fields")
        .and_then(Value::as_array)
        .ok_or("schema has no fields")?;
    let mut out = Vec::with_capacity(fields.len());
    for f in fields {
        let name = f
            .get("name")
            .and_then(Value::as_str)
            .ok_or("field without a name")?;
        let ty = f.get("type").ok_or("field without a type")?;
        let nullable = match (f.get("nullable"), f.get("required")) {
            (Some(n), _) => n.as_bool().unwrap_or(true),
            (None, Some(r)) => !r.as_bool().unwrap_or(false),
            _ => true,
        };
        out.push(Field::new(
            name,
            map(ty).map_err(|e| format!("column `{name}`: {e}"))?,
            nullable,
        ));
    }
    Ok(Schema::new(out))
}

fn decimal(text: &str) -> Option<DataType> {
    let inner = text.strip_prefix("decimal(")?.strip_suffix(')')?;
    let (p, s) = inner.split_once(',')?;
    Some(DataType::Decimal128(
        p.trim().parse().ok()?,
        s.trim().parse().ok()?,
    ))
}

fn delta_type(t: &Value) -> Result<DataType, String> {
    let Some(name) = t.as_str() else {
        return Err(format!("nested type {t} not supported yet"));
    };
    Ok(match name {
        "string" => DataType::Utf8,
        "long" => DataType::Int64,
        "integer" => DataType::Int32,
        "short" => DataType::Int16,
        "byte" => DataType::Int8,
        "float" => DataType::Float32,
        "double" => DataType::Float64,
        "boolean" => DataType::Boolean,
        "binary" => DataType::Binary,
        "date" => DataType::Date32,
        "timestamp" => DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
        "timestamp_ntz" => DataType::Timestamp(TimeUnit::Microsecond, None),
        other => decimal(other).ok_or_else(|| format!("unknown Delta type `{other}`"))?,
    })
}

fn iceberg_type(t: &Value) -> Result<DataType, String> {
    let Some(name) = t.as_str() else {
        return Err(format!("nested type {t} not supported yet"));
    };
    Ok(match name {
        "string" | "uuid" => DataType::Utf8,
        "long" => DataType::Int64,
        "int" => DataType::Int32,
        "float" => DataType::Float32,
        "double" => DataType::Float64,
        "boolean" => DataType::Boolean,
        "binary" | "fixed" => DataType::Binary,
        "date" => DataType::Date32,
        "time" => DataType::Time64(TimeUnit::Microsecond),
        "timestamp" => DataType::Timestamp(TimeUnit::Microsecond, None),
        "timestamptz" => DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
        other => decimal(other).ok_or_else(|| format!("unknown Iceberg type `{other}`"))?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_types_are_inferred() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.csv");
        std::fs::write(&path, "id,site,value\n1,ox,1.5\n2,cam,2.5\n").unwrap();
        let SourceSchema::Known(s) = read_schema(SourceFormat::Csv, &path, &path, &[]) else {
            panic!()
        };
        let types: Vec<String> = s
            .fields()
            .iter()
            .map(|f| format!("{}:{}", f.name(), f.data_type()))
            .collect();
        assert_eq!(types, ["id:Int64", "site:Utf8", "value:Float64"]);
    }

    #[test]
    fn iceberg_and_delta_schema_json() {
        let iceberg = serde_json::json!({"fields": [
            {"id": 1, "name": "id", "required": true, "type": "long"},
            {"id": 2, "name": "amount", "required": false, "type": "decimal(10, 2)"}]});
        let s = struct_fields(&iceberg, iceberg_type).unwrap();
        assert_eq!(s.field(0).data_type(), &DataType::Int64);
        assert!(!s.field(0).is_nullable());
        assert_eq!(s.field(1).data_type(), &DataType::Decimal128(10, 2));
        let delta = serde_json::json!({"type": "struct", "fields": [{"name": "ts", "type": "timestamp", "nullable": true, "metadata": {}}]});
        assert!(matches!(
            struct_fields(&delta, delta_type)
                .unwrap()
                .field(0)
                .data_type(),
            DataType::Timestamp(_, Some(_))
        ));
    }
}
