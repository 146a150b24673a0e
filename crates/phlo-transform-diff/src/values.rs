//! Arrow values as JSON, for samples: numbers and booleans as JSON scalars, NULL as null,
//! everything else as Arrow prints it (decimals `4.25`, dates `2024-01-05`, timestamps
//! `2024-01-05T09:00:00`; DataFusion's `ScalarValue` prints a decimal as `Some(425),38,2` and a
//! timestamp as its integer).

use datafusion::arrow::array::{Array, ArrayRef};
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use datafusion::scalar::ScalarValue;
use serde_json::{Map, Value};

pub fn value(array: &ArrayRef, row: usize) -> Value {
    if array.is_null(row) {
        return Value::Null;
    }
    let Ok(scalar) = ScalarValue::try_from_array(array.as_ref(), row) else {
        return Value::String("<unprintable>".into());
    };
    match scalar {
        ScalarValue::Boolean(Some(b)) => Value::Bool(b),
        ScalarValue::Int8(Some(v)) => v.into(),
        ScalarValue::Int16(Some(v)) => v.into(),
        ScalarValue::Int32(Some(v)) => v.into(),
        ScalarValue::Int64(Some(v)) => v.into(),
        ScalarValue::UInt8(Some(v)) => v.into(),
        ScalarValue::UInt16(Some(v)) => v.into(),
        ScalarValue::UInt32(Some(v)) => v.into(),
        ScalarValue::UInt64(Some(v)) => v.into(),
        ScalarValue::Float32(Some(v)) => float(v as f64, scalar_text(&scalar)),
        ScalarValue::Float64(Some(v)) => float(v, scalar_text(&scalar)),
        ScalarValue::Utf8(Some(s))
        | ScalarValue::LargeUtf8(Some(s))
        | ScalarValue::Utf8View(Some(s)) => Value::String(s),
        other => Value::String(
            ArrayFormatter::try_new(array.as_ref(), &FormatOptions::default())
                .map(|f| f.value(row).to_string())
                .unwrap_or_else(|_| scalar_text(&other)),
        ),
    }
}

fn scalar_text(s: &ScalarValue) -> String {
    s.to_string()
}

/// NaN and infinities are not JSON numbers: they stay text.
fn float(v: f64, text: String) -> Value {
    serde_json::Number::from_f64(v)
        .map(Value::Number)
        .unwrap_or(Value::String(text))
}

/// `{column: value}` for the given columns of one row.
pub fn object<'a>(columns: impl IntoIterator<Item = (&'a str, &'a ArrayRef)>, row: usize) -> Value {
    let mut map = Map::new();
    for (name, array) in columns {
        map.insert(name.to_string(), value(array, row));
    }
    Value::Object(map)
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Date32Array, Decimal128Array, TimestampMicrosecondArray};
    use std::sync::Arc;

    /// Decimals, dates and timestamps read as people write them, not as DataFusion's
    /// `ScalarValue` debug-prints them.
    #[test]
    fn decimals_dates_and_timestamps_print_as_written() {
        let decimal: ArrayRef = Arc::new(
            Decimal128Array::from(vec![425, -5])
                .with_precision_and_scale(38, 2)
                .unwrap(),
        );
        assert_eq!(value(&decimal, 0), Value::String("4.25".into()));
        assert_eq!(value(&decimal, 1), Value::String("-0.05".into()));
        let date: ArrayRef = Arc::new(Date32Array::from(vec![19727]));
        assert_eq!(value(&date, 0), Value::String("2024-01-05".into()));
        let at: ArrayRef = Arc::new(TimestampMicrosecondArray::from(vec![1_704_445_200_000_000]));
        assert_eq!(value(&at, 0), Value::String("2024-01-05T09:00:00".into()));
    }
}
