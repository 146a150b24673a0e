//! A query's rows as Arrow record batches ([`crate::Adapter::fetch`]). sqlx is built here
//! without its date and decimal types, and PostgreSQL's text form of every type is exact, so
//! each column is read as text and cast by Arrow to the type its PostgreSQL type maps to:
//! integers, floats, booleans, dates and timestamps to their Arrow types, `numeric` to a
//! 38-digit decimal at the largest scale among its values (marked [`SCALE_FROM_VALUES`]),
//! everything else as text. A value Arrow cannot read (an infinite timestamp, a BC date, a
//! `NaN` numeric) fails the read rather than changing.

use datafusion::arrow::array::{Array, ArrayRef, RecordBatch, StringArray};
use datafusion::arrow::compute::{cast_with_options, CastOptions};
use datafusion::arrow::datatypes::{DataType, Field, SchemaRef, TimeUnit};
use phlo_transform_core::diagnostic::codes;
use sqlx::{Column, Executor, PgConnection, Row, TypeInfo};
use std::collections::HashMap;

use super::errors::plain;
use crate::field_marks::SCALE_FROM_VALUES;
use crate::sqlgen::ident;
use crate::AdapterError;

/// Runs `sql` on `conn`: its columns described first (names and types, nothing executed),
/// then read as text, each by its position (names may repeat in a query's output).
pub(super) async fn fetch(
    conn: &mut PgConnection,
    sql: &str,
) -> Result<(SchemaRef, Vec<RecordBatch>), AdapterError> {
    let described = (&mut *conn)
        .describe(sql)
        .await
        .map_err(|e| plain(e, sql))?;
    let columns: Vec<(String, String)> = described
        .columns()
        .iter()
        .map(|c| (c.name().to_string(), c.type_info().name().to_string()))
        .collect();
    let positions = (0..columns.len())
        .map(|i| ident(&format!("c{i}")))
        .collect::<Vec<_>>();
    let texts = columns
        .iter()
        .zip(&positions)
        .map(|((_, pg), at)| as_text(&format!("q.{at}"), pg))
        .collect::<Vec<_>>()
        .join(", ");
    let text_sql = format!("SELECT {texts} FROM ({sql}) AS q({})", positions.join(", "));
    let rows = sqlx::query(&text_sql)
        .fetch_all(&mut *conn)
        .await
        .map_err(|e| plain(e, sql))?;
    let mut fields = Vec::with_capacity(columns.len());
    let mut arrays: Vec<ArrayRef> = Vec::with_capacity(columns.len());
    for (i, (name, pg)) in columns.iter().enumerate() {
        let text: StringArray = rows
            .iter()
            .map(|r| r.try_get::<Option<String>, _>(i))
            .collect::<Result<_, _>>()
            .map_err(|e| plain(e, sql))?;
        let data_type = arrow_type(pg, &text);
        let options = CastOptions {
            safe: false,
            ..CastOptions::default()
        };
        let array = cast_with_options(&text, &data_type, &options).map_err(|e| {
            AdapterError::new(
                codes::QUERY_FAILED,
                format!("column `{name}` ({pg}) does not read as {data_type}: {e}"),
            )
        })?;
        let field = Field::new(name, data_type, true);
        fields.push(if pg == "NUMERIC" {
            field.with_metadata(HashMap::from([(SCALE_FROM_VALUES.into(), "true".into())]))
        } else {
            field
        });
        arrays.push(array);
    }
    crate::fetched::one_batch(fields, arrays)
}

/// The text form of `column` (of PostgreSQL type `pg`): `timestamptz` as its UTC time
/// without an offset (which Arrow reads into a UTC timestamp), everything else as `::text`
/// (sqlx sessions use `DateStyle` ISO).
fn as_text(column: &str, pg: &str) -> String {
    match pg {
        "TIMESTAMPTZ" => format!("({column} AT TIME ZONE 'UTC')::text"),
        _ => format!("{column}::text"),
    }
}

/// The Arrow type a column of PostgreSQL type `pg` is read as; `numeric` takes the largest
/// scale of its values (`text`), so that every value reads exactly.
fn arrow_type(pg: &str, text: &StringArray) -> DataType {
    match pg {
        "BOOL" => DataType::Boolean,
        "INT2" => DataType::Int16,
        "INT4" => DataType::Int32,
        "INT8" => DataType::Int64,
        "FLOAT4" => DataType::Float32,
        "FLOAT8" => DataType::Float64,
        "NUMERIC" => DataType::Decimal128(38, numeric_scale(text)),
        "DATE" => DataType::Date32,
        "TIMESTAMP" => DataType::Timestamp(TimeUnit::Microsecond, None),
        "TIMESTAMPTZ" => DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
        _ => DataType::Utf8,
    }
}

/// The most digits after the decimal point among `text`'s values (at most 38).
fn numeric_scale(text: &StringArray) -> i8 {
    let scale = (0..text.len())
        .filter(|&i| text.is_valid(i))
        .filter_map(|i| text.value(i).split_once('.').map(|(_, f)| f.len()))
        .max()
        .unwrap_or(0);
    scale.min(38) as i8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numeric_reads_at_the_largest_scale_of_its_values() {
        let text = StringArray::from(vec![Some("1.5"), None, Some("-2.125"), Some("3")]);
        assert_eq!(numeric_scale(&text), 3);
        assert_eq!(arrow_type("NUMERIC", &text), DataType::Decimal128(38, 3));
        let read = cast_with_options(
            &text,
            &arrow_type("NUMERIC", &text),
            &CastOptions {
                safe: false,
                ..CastOptions::default()
            },
        )
        .unwrap();
        let read = read
            .as_any()
            .downcast_ref::<datafusion::arrow::array::Decimal128Array>()
            .unwrap();
        assert_eq!(
            read.iter().collect::<Vec<_>>(),
            vec![Some(1500), None, Some(-2125), Some(3000)]
        );
    }

    #[test]
    fn types_without_an_arrow_counterpart_read_as_text() {
        let none = StringArray::from(Vec::<Option<&str>>::new());
        assert_eq!(arrow_type("UUID", &none), DataType::Utf8);
        assert_eq!(arrow_type("JSONB", &none), DataType::Utf8);
        assert_eq!(
            arrow_type("TIMESTAMPTZ", &none),
            DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))
        );
    }
}
