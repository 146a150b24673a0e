//! A query's rows as Arrow record batches ([`crate::Adapter::fetch`]) from Trino's JSON
//! rows. Each column is typed as the model's Iceberg table would store it — the type the
//! other side of a `diff` on Trino is read with (iceberg-rust's Arrow schema): `tinyint`,
//! `smallint` and `integer` as 32-bit integers, `timestamp(p)` and `time(p)` as
//! microseconds, a zoned timestamp as UTC (`+00:00`), `decimal(p,s)` at its own precision and
//! scale, `varchar(n)` and `char(n)` as text, `varbinary` as bytes (read as hex), `uuid` as
//! 16 bytes. Values arrive as JSON text or numbers and are cast by Arrow. Anything else
//! (arrays, maps, rows, `json`, intervals, zoned times) is read as its JSON text and marked
//! [`JSON_TEXT`]: the Iceberg side reads such a column as a nested type, so a diff lists it as
//! retyped and does not compare it. A value Arrow cannot read fails the read rather than
//! changing.

use datafusion::arrow::array::{
    ArrayRef, FixedSizeBinaryArray, LargeBinaryArray, RecordBatch, StringArray,
};
use datafusion::arrow::compute::{cast_with_options, CastOptions};
use datafusion::arrow::datatypes::{DataType, Field, SchemaRef, TimeUnit};
use phlo_transform_core::diagnostic::codes;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

use super::client::Column;
use crate::field_marks::JSON_TEXT;
use crate::AdapterError;

/// The UTC zone iceberg-rust gives `timestamptz` columns.
const UTC: &str = "+00:00";

/// `sql` with no rows: its result columns are what Trino reports for it.
pub(super) fn columns_sql(sql: &str) -> String {
    format!("SELECT * FROM ({sql}) AS phlo_q LIMIT 0")
}

/// `sql` read by position (names may repeat in a query's output), each column of `columns`
/// in the form its Arrow type reads: a zoned timestamp as its UTC time without the zone.
pub(super) fn read_sql(sql: &str, columns: &[Column]) -> String {
    let positions: Vec<String> = (0..columns.len()).map(|i| format!("c{i}")).collect();
    let values = columns
        .iter()
        .zip(&positions)
        .map(|(c, at)| match arrow_type(&c.type_name) {
            DataType::Timestamp(_, Some(_)) => {
                format!("CAST(phlo_q.{at} AT TIME ZONE 'UTC' AS timestamp(6))")
            }
            DataType::LargeBinary => format!("to_hex(phlo_q.{at})"),
            _ => format!("phlo_q.{at}"),
        })
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "SELECT {values} FROM ({sql}) AS phlo_q({})",
        positions.join(", ")
    )
}

/// The rows of [`read_sql`] as one batch, named and typed after `columns`.
pub(super) fn batch(
    columns: &[Column],
    rows: &[Vec<Value>],
) -> Result<(SchemaRef, Vec<RecordBatch>), AdapterError> {
    let options = CastOptions {
        safe: false,
        ..CastOptions::default()
    };
    let mut fields = Vec::with_capacity(columns.len());
    let mut arrays: Vec<ArrayRef> = Vec::with_capacity(columns.len());
    for (i, column) in columns.iter().enumerate() {
        let text: StringArray = rows.iter().map(|r| text_of(r.get(i))).collect();
        let data_type = arrow_type(&column.type_name);
        let unreadable = |e: String| {
            AdapterError::new(
                codes::QUERY_FAILED,
                format!(
                    "column `{}` ({}) does not read as {data_type}: {e}",
                    column.name, column.type_name
                ),
            )
        };
        let array: ArrayRef = match data_type {
            DataType::LargeBinary => Arc::new(LargeBinaryArray::from_iter(
                decoded(&text, |t| hex::decode(t).ok()).map_err(unreadable)?,
            )),
            DataType::FixedSizeBinary(16) => {
                let uuid = |t: &str| {
                    hex::decode(t.replace('-', ""))
                        .ok()
                        .filter(|b| b.len() == 16)
                };
                let bytes = decoded(&text, uuid).map_err(unreadable)?;
                Arc::new(
                    FixedSizeBinaryArray::try_from_sparse_iter_with_size(bytes.into_iter(), 16)
                        .map_err(|e| unreadable(e.to_string()))?,
                )
            }
            _ => cast_with_options(&text, &data_type, &options)
                .map_err(|e| unreadable(e.to_string()))?,
        };
        let field = Field::new(&column.name, data_type.clone(), true);
        fields.push(
            if data_type == DataType::Utf8 && !is_text(&column.type_name) {
                field.with_metadata(HashMap::from([(
                    JSON_TEXT.into(),
                    column.type_name.clone(),
                )]))
            } else {
                field
            },
        );
        arrays.push(array);
    }
    crate::fetched::one_batch(fields, arrays)
}

/// Each value of `text` as the bytes `decode` reads from it; a value it cannot read fails.
fn decoded(
    text: &StringArray,
    decode: impl Fn(&str) -> Option<Vec<u8>>,
) -> Result<Vec<Option<Vec<u8>>>, String> {
    text.iter()
        .map(|t| match t {
            None => Ok(None),
            Some(t) => decode(t).map(Some).ok_or_else(|| format!("`{t}`")),
        })
        .collect()
}

/// A JSON value as the text Arrow casts: strings as they are, numbers and booleans as
/// written, anything structured as its JSON.
fn text_of(value: Option<&Value>) -> Option<String> {
    match value? {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

/// Whether Trino type `trino` is text (`varchar`, `char`), read as itself.
fn is_text(trino: &str) -> bool {
    matches!(
        trino.split('(').next().unwrap_or(trino).trim(),
        "varchar" | "char"
    )
}

/// The Arrow type a column of Trino type `trino` is read as (see the module doc).
fn arrow_type(trino: &str) -> DataType {
    let zoned = trino.ends_with("with time zone");
    match trino.split('(').next().unwrap_or(trino).trim() {
        "boolean" => DataType::Boolean,
        "tinyint" | "smallint" | "integer" => DataType::Int32,
        "bigint" => DataType::Int64,
        "real" => DataType::Float32,
        "double" => DataType::Float64,
        "date" => DataType::Date32,
        "timestamp" | "timestamp with time zone" if zoned => {
            DataType::Timestamp(TimeUnit::Microsecond, Some(UTC.into()))
        }
        "timestamp" => DataType::Timestamp(TimeUnit::Microsecond, None),
        "time" if !zoned => DataType::Time64(TimeUnit::Microsecond),
        "varbinary" => DataType::LargeBinary,
        "uuid" => DataType::FixedSizeBinary(16),
        "decimal" => decimal(trino).unwrap_or(DataType::Utf8),
        _ => DataType::Utf8,
    }
}

/// `decimal(p,s)` as Arrow's decimal of that precision and scale.
fn decimal(trino: &str) -> Option<DataType> {
    let inner = trino.strip_prefix("decimal(")?.strip_suffix(')')?;
    let (p, s) = inner.split_once(',')?;
    Some(DataType::Decimal128(
        p.trim().parse().ok()?,
        s.trim().parse().ok()?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::util::display::array_value_to_string;
    use serde_json::json;

    fn column(name: &str, type_name: &str) -> Column {
        Column {
            name: name.into(),
            type_name: type_name.into(),
        }
    }

    #[test]
    fn trino_types_read_as_the_iceberg_table_stores_them() {
        assert_eq!(arrow_type("smallint"), DataType::Int32);
        assert_eq!(arrow_type("decimal(12,2)"), DataType::Decimal128(12, 2));
        assert_eq!(arrow_type("varchar(25)"), DataType::Utf8);
        assert_eq!(
            arrow_type("timestamp(3)"),
            DataType::Timestamp(TimeUnit::Microsecond, None)
        );
        assert_eq!(
            arrow_type("timestamp(6) with time zone"),
            DataType::Timestamp(TimeUnit::Microsecond, Some(UTC.into()))
        );
        assert_eq!(
            arrow_type("timestamp with time zone"),
            arrow_type("timestamp(3) with time zone")
        );
        assert_eq!(arrow_type("time(3) with time zone"), DataType::Utf8);
        assert_eq!(
            arrow_type("time(3)"),
            DataType::Time64(TimeUnit::Microsecond)
        );
        assert_eq!(arrow_type("varbinary"), DataType::LargeBinary);
        assert_eq!(arrow_type("uuid"), DataType::FixedSizeBinary(16));
        assert_eq!(arrow_type("array(integer)"), DataType::Utf8);
    }

    #[test]
    fn json_rows_cast_exactly() {
        let columns = [
            column("d", "double"),
            column("n", "decimal(5,2)"),
            column("t", "timestamp(6)"),
            column("b", "boolean"),
            column("a", "array(integer)"),
            column("v", "varbinary"),
            column("u", "uuid"),
            column("s", "varchar(3)"),
            column("h", "time(6)"),
        ];
        let rows = vec![
            vec![
                json!(0.1),
                json!("-123.45"),
                json!("2024-01-05 09:00:00.000001"),
                json!(true),
                json!([1, 2]),
                json!("00FF10"),
                json!("12345678-9abc-def0-1234-56789abcdef0"),
                json!("abc"),
                json!("09:00:00.123456"),
            ],
            vec![json!("NaN"), Value::Null, Value::Null, json!(false)]
                .into_iter()
                .chain(std::iter::repeat_n(Value::Null, 5))
                .collect(),
            vec![
                json!("-Infinity"),
                json!("0.00"),
                json!("1969-12-31 23:59:59.5"),
                Value::Null,
                json!([]),
                json!(""),
                json!("00000000-0000-0000-0000-000000000001"),
                json!(""),
                json!("23:59:59"),
            ],
        ];
        let (schema, batches) = batch(&columns, &rows).unwrap();
        assert_eq!(schema.fields().len(), 9);
        // Only the array is JSON text; the varchar is text.
        let json_text: Vec<&str> = schema
            .fields()
            .iter()
            .filter(|f| f.metadata().contains_key(JSON_TEXT))
            .map(|f| f.name().as_str())
            .collect();
        assert_eq!(json_text, ["a"]);
        let shown = |c: usize, r: usize| array_value_to_string(batches[0].column(c), r).unwrap();
        assert_eq!(shown(0, 0), "0.1");
        assert_eq!(shown(0, 1), "NaN");
        assert_eq!(shown(0, 2), "-inf");
        assert_eq!(shown(1, 0), "-123.45");
        assert_eq!(shown(2, 0), "2024-01-05T09:00:00.000001");
        assert_eq!(shown(2, 2), "1969-12-31T23:59:59.500");
        assert_eq!(shown(3, 1), "false");
        assert_eq!(shown(4, 0), "[1,2]");
        assert_eq!(shown(5, 0), "00ff10");
        assert_eq!(shown(5, 2), "");
        assert_eq!(shown(6, 0), "123456789abcdef0123456789abcdef0");
        assert_eq!(shown(6, 2), "00000000000000000000000000000001");
        assert_eq!(shown(8, 0), "09:00:00.123456");
        assert!(batches[0].column(5).is_null(1) && batches[0].column(6).is_null(1));
    }

    #[test]
    fn a_value_arrow_cannot_read_fails_the_read() {
        let e = batch(&[column("n", "decimal(3,1)")], &[vec![json!("12345.6")]]).unwrap_err();
        assert!(e.message.contains("`n` (decimal(3,1))"), "{}", e.message);
    }

    #[test]
    fn zoned_timestamps_are_read_at_utc_by_position() {
        let sql = read_sql(
            "SELECT 1",
            &[
                column("x", "integer"),
                column("x", "timestamp(3) with time zone"),
            ],
        );
        assert_eq!(
            sql,
            "SELECT phlo_q.c0, CAST(phlo_q.c1 AT TIME ZONE 'UTC' AS timestamp(6)) FROM (SELECT 1) AS phlo_q(c0, c1)"
        );
    }
}
