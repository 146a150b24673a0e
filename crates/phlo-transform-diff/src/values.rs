//! Arrow values as JSON, for samples: numbers and booleans as JSON scalars, NULL as null,
//! everything else as DataFusion prints it.

use datafusion::arrow::array::{Array, ArrayRef};
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
        other => Value::String(scalar_text(&other)),
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
