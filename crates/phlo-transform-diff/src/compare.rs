//! Value comparison of two aligned columns, vectorised: NULL-safe (NULL equals NULL, NULL
//! differs from any value), floats within an absolute tolerance, everything else exact
//! (decimals included: `1.10` and `1.1` of one decimal type are the same value).

use datafusion::arrow::array::{Array, ArrayRef, BooleanArray, Float64Array};
use datafusion::arrow::compute::kernels::cmp::distinct;
use datafusion::arrow::compute::{and_not, cast};
use datafusion::arrow::datatypes::DataType;
use datafusion::arrow::error::ArrowError;
use datafusion::arrow::row::{RowConverter, SortField};

/// `true` where `base[i]` and `candidate[i]` differ. No nulls in the result.
pub fn changed(
    base: &ArrayRef,
    candidate: &ArrayRef,
    tolerance: Option<f64>,
) -> Result<BooleanArray, ArrowError> {
    let differs = match distinct(base, candidate) {
        Ok(d) => d,
        // Nested types (lists, structs, maps) the comparison kernels do not cover: compare
        // their row-format encodings, which are equal exactly when the values are.
        Err(_) => return changed_by_rows(base, candidate),
    };
    match tolerance {
        Some(t) if differs.true_count() > 0 => {
            within_tolerance(base, candidate, t).and_then(|close| and_not(&differs, &close))
        }
        _ => Ok(differs),
    }
}

/// `true` where both values are present and `|base - candidate| <= tolerance`.
fn within_tolerance(
    base: &ArrayRef,
    candidate: &ArrayRef,
    tolerance: f64,
) -> Result<BooleanArray, ArrowError> {
    let b = cast(base, &DataType::Float64)?;
    let c = cast(candidate, &DataType::Float64)?;
    let b = b.as_any().downcast_ref::<Float64Array>().expect("cast");
    let c = c.as_any().downcast_ref::<Float64Array>().expect("cast");
    Ok(b.iter()
        .zip(c.iter())
        .map(|(x, y)| {
            Some(match (x, y) {
                (Some(x), Some(y)) => (x - y).abs() <= tolerance,
                _ => false,
            })
        })
        .collect())
}

fn changed_by_rows(base: &ArrayRef, candidate: &ArrayRef) -> Result<BooleanArray, ArrowError> {
    let converter = RowConverter::new(vec![SortField::new(base.data_type().clone())])?;
    let b = converter.convert_columns(std::slice::from_ref(base))?;
    let c = converter.convert_columns(std::slice::from_ref(candidate))?;
    Ok((0..base.len())
        .map(|i| Some(b.row(i) != c.row(i)))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Decimal128Array, Int64Array, StringArray};
    use std::sync::Arc;

    fn trues(a: &BooleanArray) -> Vec<bool> {
        a.iter().map(|v| v.unwrap()).collect()
    }

    #[test]
    fn nulls_are_compared_safely() {
        let b: ArrayRef = Arc::new(Int64Array::from(vec![Some(1), None, None, Some(4)]));
        let c: ArrayRef = Arc::new(Int64Array::from(vec![Some(1), None, Some(3), None]));
        assert_eq!(
            trues(&changed(&b, &c, None).unwrap()),
            [false, false, true, true]
        );
        let b: ArrayRef = Arc::new(StringArray::from(vec![Some("a"), None]));
        let c: ArrayRef = Arc::new(StringArray::from(vec![Some("b"), None]));
        assert_eq!(trues(&changed(&b, &c, None).unwrap()), [true, false]);
    }

    #[test]
    fn floats_within_tolerance_and_decimals_exact() {
        let b: ArrayRef = Arc::new(Float64Array::from(vec![
            Some(1.0),
            Some(1.0),
            None,
            Some(f64::NAN),
        ]));
        let c: ArrayRef = Arc::new(Float64Array::from(vec![
            Some(1.0004),
            Some(1.002),
            Some(1.0),
            Some(f64::NAN),
        ]));
        assert_eq!(
            trues(&changed(&b, &c, Some(0.001)).unwrap()),
            [false, true, true, false]
        );
        assert_eq!(
            trues(&changed(&b, &c, None).unwrap()),
            [true, true, true, false]
        );
        let d = |v: Vec<i128>| -> ArrayRef {
            Arc::new(
                Decimal128Array::from(v)
                    .with_precision_and_scale(10, 4)
                    .unwrap(),
            )
        };
        assert_eq!(
            trues(&changed(&d(vec![10000, 10001]), &d(vec![10000, 10000]), None).unwrap()),
            [false, true]
        );
    }
}
