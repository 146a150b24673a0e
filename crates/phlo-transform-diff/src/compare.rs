//! Value comparison of two aligned columns, vectorised: NULL-safe (NULL equals NULL, NULL
//! differs from any value), floats within an absolute tolerance, everything else exact
//! (decimals included: `1.10` and `1.1` of one decimal type are the same value).

use datafusion::arrow::array::ArrayData;
use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, Float64Array, GenericByteArray, GenericByteViewArray,
    UInt32Array,
};
use datafusion::arrow::buffer::{BooleanBuffer, NullBuffer};
use datafusion::arrow::compute::kernels::cmp::distinct;
use datafusion::arrow::compute::{and_not, cast, interleave, take};
use datafusion::arrow::datatypes::{
    ArrowNativeType, BinaryViewType, ByteArrayType, ByteViewType, DataType, Float32Type,
    Float64Type, GenericBinaryType, GenericStringType, StringViewType,
};
use datafusion::arrow::error::ArrowError;
use datafusion::arrow::row::{RowConverter, SortField};
use std::cmp::Ordering;

use crate::chunks::split;

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

/// One base column across its chunks, with what every comparison reads of it taken once (per
/// candidate batch and partition it would cost a pass over every chunk).
pub struct BaseColumn {
    arrays: Vec<ArrayRef>,
    data: Vec<ArrayData>,
    nulls: Vec<Option<NullBuffer>>,
    any_nulls: bool,
    /// The chunks' type, when they all have the same.
    data_type: Option<DataType>,
}

impl BaseColumn {
    pub fn new(arrays: Vec<ArrayRef>) -> Self {
        let data_type = match arrays.split_first() {
            Some((first, rest)) if rest.iter().all(|a| a.data_type() == first.data_type()) => {
                Some(first.data_type().clone())
            }
            _ => None,
        };
        let nulls: Vec<Option<NullBuffer>> = arrays.iter().map(|a| a.logical_nulls()).collect();
        BaseColumn {
            data: arrays.iter().map(|a| a.to_data()).collect(),
            any_nulls: nulls.iter().any(Option::is_some),
            nulls,
            arrays,
            data_type,
        }
    }
}

/// Per pair `i`, whether base row `base_rows[i]` (a row id of the chunks of `base`, see
/// `chunks`) and `candidate[cand_rows[i]]` differ, by the rules of `changed`, read in place:
/// primitives by their bits (which is how `distinct` compares floats: total order, NaN equal
/// to NaN), strings and binaries by their bytes. Other types gather the pairs and use
/// `changed`.
pub fn changed_at(
    base: &BaseColumn,
    base_rows: &[u32],
    candidate: &ArrayRef,
    cand_rows: &[u32],
    tolerance: Option<f64>,
) -> Result<BooleanBuffer, ArrowError> {
    let at = Pairs {
        base_rows,
        cand_rows,
        base_nulls: base.any_nulls.then_some(base.nulls.as_slice()),
        cand_nulls: candidate.logical_nulls(),
    };
    let data_type = candidate.data_type();
    if base.data_type.as_ref() != Some(data_type) {
        return gathered(base, base_rows, candidate, cand_rows, tolerance);
    }
    let arrays = &base.arrays;
    Ok(match (data_type, tolerance) {
        (DataType::Float64, Some(t)) => {
            let b: Vec<_> = arrays
                .iter()
                .map(|b| b.as_primitive::<Float64Type>())
                .collect();
            let c = candidate.as_primitive::<Float64Type>();
            at.collect(|(bc, x), y| {
                let (x, y) = (b[bc].value(x), c.value(y));
                x.to_bits() != y.to_bits() && beyond(x - y, t)
            })
        }
        (DataType::Float32, Some(t)) => {
            let b: Vec<_> = arrays
                .iter()
                .map(|b| b.as_primitive::<Float32Type>())
                .collect();
            let c = candidate.as_primitive::<Float32Type>();
            at.collect(|(bc, x), y| {
                let (x, y) = (b[bc].value(x), c.value(y));
                x.to_bits() != y.to_bits() && beyond(x as f64 - y as f64, t)
            })
        }
        (_, Some(_)) => gathered(base, base_rows, candidate, cand_rows, tolerance)?,
        (DataType::Boolean, None) => {
            let b: Vec<_> = arrays.iter().map(|b| b.as_boolean()).collect();
            let c = candidate.as_boolean();
            at.collect(|(bc, x), y| b[bc].value(x) != c.value(y))
        }
        (DataType::Utf8, None) => bytes::<GenericStringType<i32>>(&at, base, candidate),
        (DataType::LargeUtf8, None) => bytes::<GenericStringType<i64>>(&at, base, candidate),
        (DataType::Binary, None) => bytes::<GenericBinaryType<i32>>(&at, base, candidate),
        (DataType::LargeBinary, None) => bytes::<GenericBinaryType<i64>>(&at, base, candidate),
        (DataType::Utf8View, None) => views::<StringViewType>(&at, base, candidate),
        (DataType::BinaryView, None) => views::<BinaryViewType>(&at, base, candidate),
        // Intervals' native types are structs, not as aligned as their width.
        (DataType::Interval(_), None) => gathered(base, base_rows, candidate, cand_rows, None)?,
        (DataType::Decimal128(_, _), None) => fixed::<i128>(&at, base, candidate),
        (t, None) => match t.primitive_width() {
            Some(1) => fixed::<u8>(&at, base, candidate),
            Some(2) => fixed::<u16>(&at, base, candidate),
            Some(4) => fixed::<u32>(&at, base, candidate),
            Some(8) => fixed::<u64>(&at, base, candidate),
            _ => gathered(base, base_rows, candidate, cand_rows, None)?,
        },
    })
}

/// Is the difference `d` beyond the tolerance `t`? (NaN always is, as in `changed`.)
fn beyond(d: f64, t: f64) -> bool {
    !matches!(
        d.abs().partial_cmp(&t),
        Some(Ordering::Less | Ordering::Equal)
    )
}

/// The matched pairs of rows and both sides' nulls (the base's per chunk).
struct Pairs<'a> {
    base_rows: &'a [u32],
    cand_rows: &'a [u32],
    /// Per chunk; `None` when no chunk has nulls.
    base_nulls: Option<&'a [Option<NullBuffer>]>,
    cand_nulls: Option<NullBuffer>,
}

impl Pairs<'_> {
    /// NULL-safe: a pair differs when one side is NULL and the other not, or both are values
    /// and `differ((base chunk, row), candidate row)` says so.
    fn collect(&self, differ: impl Fn((usize, usize), usize) -> bool) -> BooleanBuffer {
        let n = self.base_rows.len();
        let (br, cr) = (self.base_rows, self.cand_rows);
        if self.base_nulls.is_none() && self.cand_nulls.is_none() {
            return BooleanBuffer::collect_bool(n, |i| differ(split(br[i]), cr[i] as usize));
        }
        let (bn, cn) = (self.base_nulls, &self.cand_nulls);
        BooleanBuffer::collect_bool(n, |i| {
            let ((bc, x), y) = (split(br[i]), cr[i] as usize);
            let xv = bn.is_none_or(|bn| bn[bc].as_ref().is_none_or(|b| b.is_valid(x)));
            let yv = cn.as_ref().is_none_or(|c| c.is_valid(y));
            xv != yv || (xv && differ((bc, x), y))
        })
    }
}

/// Fixed-width values compared by their bits (`T` as wide as the type).
fn fixed<T: ArrowNativeType>(
    at: &Pairs<'_>,
    base: &BaseColumn,
    candidate: &ArrayRef,
) -> BooleanBuffer {
    let b: Vec<&[T]> = base.data.iter().map(|b| b.buffer::<T>(0)).collect();
    let c = candidate.to_data();
    let c = c.buffer::<T>(0);
    at.collect(|(bc, x), y| b[bc][x] != c[y])
}

fn bytes<T: ByteArrayType>(
    at: &Pairs<'_>,
    base: &BaseColumn,
    candidate: &ArrayRef,
) -> BooleanBuffer {
    let b: Vec<&GenericByteArray<T>> = base.arrays.iter().map(|b| b.as_bytes::<T>()).collect();
    let c: &GenericByteArray<T> = candidate.as_bytes::<T>();
    at.collect(|(bc, x), y| {
        let (x, y): (&[u8], &[u8]) = (b[bc].value(x).as_ref(), c.value(y).as_ref());
        x != y
    })
}

/// View arrays: the 16-byte views first (length and prefix, or the whole value when it is
/// at most 12 bytes), then the bytes.
fn views<T: ByteViewType>(
    at: &Pairs<'_>,
    base: &BaseColumn,
    candidate: &ArrayRef,
) -> BooleanBuffer {
    let b: Vec<&GenericByteViewArray<T>> =
        base.arrays.iter().map(|b| b.as_byte_view::<T>()).collect();
    let c: &GenericByteViewArray<T> = candidate.as_byte_view::<T>();
    let cv = c.views();
    at.collect(|(bc, x), y| {
        let (vx, vy) = (b[bc].views()[x], cv[y]);
        if vx as u64 != vy as u64 {
            return true; // length or prefix
        }
        let len = vx as u32;
        if len <= 12 {
            // Inline: the bytes after the length, up to the length (padding ignored).
            let mask = (1u128 << (len * 8)) - 1;
            return (vx >> 32) & mask != (vy >> 32) & mask;
        }
        let (x, y): (&[u8], &[u8]) = (b[bc].value(x).as_ref(), c.value(y).as_ref());
        x != y
    })
}

/// Any other type: the pairs gathered, then compared by `changed`.
fn gathered(
    base: &BaseColumn,
    base_rows: &[u32],
    candidate: &ArrayRef,
    cand_rows: &[u32],
    tolerance: Option<f64>,
) -> Result<BooleanBuffer, ArrowError> {
    let chunks: Vec<&dyn Array> = base.arrays.iter().map(|b| b.as_ref()).collect();
    let at: Vec<(usize, usize)> = base_rows.iter().map(|&id| split(id)).collect();
    let b = interleave(&chunks, &at)?;
    let c = take(candidate, &UInt32Array::from(cand_rows.to_vec()), None)?;
    let differs = changed(&b, &c, tolerance)?;
    Ok(match differs.nulls() {
        Some(nulls) => differs.values() & nulls.inner(),
        None => differs.values().clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunks::first_id;
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

    /// Reading pairs in place agrees with gathering them and comparing whole columns, for
    /// every type the in-place comparison covers and one it does not (a list).
    #[test]
    fn in_place_agrees_with_gathered() {
        use datafusion::arrow::array::{
            BooleanArray, Float32Array, Int32Array, ListArray, StringViewArray,
        };
        use datafusion::arrow::datatypes::Int32Type;
        let long = "a string longer than twelve bytes";
        let longer = "a string longer than twelve bytez";
        let cases: Vec<(ArrayRef, ArrayRef, Option<f64>)> = vec![
            (
                Arc::new(Int64Array::from(vec![Some(1), None, Some(3), Some(4)])),
                Arc::new(Int64Array::from(vec![Some(1), Some(2), None, Some(5)])),
                None,
            ),
            (
                Arc::new(Float64Array::from(vec![
                    Some(1.0),
                    Some(f64::NAN),
                    Some(-0.0),
                    None,
                ])),
                Arc::new(Float64Array::from(vec![
                    Some(1.0005),
                    Some(f64::NAN),
                    Some(0.0),
                    None,
                ])),
                Some(0.001),
            ),
            (
                Arc::new(Float64Array::from(vec![
                    Some(1.0),
                    Some(f64::NAN),
                    Some(-0.0),
                    None,
                ])),
                Arc::new(Float64Array::from(vec![
                    Some(1.0005),
                    Some(1.0),
                    Some(0.0),
                    Some(2.0),
                ])),
                None,
            ),
            (
                Arc::new(Float32Array::from(vec![
                    Some(1.0),
                    Some(2.0),
                    None,
                    Some(4.0),
                ])),
                Arc::new(Float32Array::from(vec![
                    Some(1.0004),
                    Some(2.5),
                    None,
                    Some(f32::NAN),
                ])),
                Some(0.001),
            ),
            (
                Arc::new(StringArray::from(vec![
                    Some("a"),
                    None,
                    Some(long),
                    Some("b"),
                ])),
                Arc::new(StringArray::from(vec![
                    Some("a"),
                    Some(""),
                    Some(longer),
                    None,
                ])),
                None,
            ),
            (
                Arc::new(StringViewArray::from(vec![
                    Some("a"),
                    Some(long),
                    Some(long),
                    None,
                    Some("twelve bytes"),
                ])),
                Arc::new(StringViewArray::from(vec![
                    Some("a"),
                    Some(longer),
                    Some(long),
                    None,
                    Some("twelve byteZ"),
                ])),
                None,
            ),
            (
                Arc::new(BooleanArray::from(vec![
                    Some(true),
                    None,
                    Some(false),
                    Some(true),
                ])),
                Arc::new(BooleanArray::from(vec![
                    Some(true),
                    Some(false),
                    Some(true),
                    None,
                ])),
                None,
            ),
            (
                Arc::new(
                    Decimal128Array::from(vec![Some(10000), Some(10001), None, Some(5)])
                        .with_precision_and_scale(10, 4)
                        .unwrap(),
                ),
                Arc::new(
                    Decimal128Array::from(vec![Some(10000), Some(10000), None, None])
                        .with_precision_and_scale(10, 4)
                        .unwrap(),
                ),
                None,
            ),
            (
                Arc::new(ListArray::from_iter_primitive::<Int32Type, _, _>(vec![
                    Some(vec![Some(1)]),
                    None,
                    Some(vec![Some(2), None]),
                ])),
                Arc::new(ListArray::from_iter_primitive::<Int32Type, _, _>(vec![
                    Some(vec![Some(1)]),
                    Some(vec![]),
                    Some(vec![Some(2), None]),
                ])),
                None,
            ),
            (
                Arc::new(Int32Array::from(vec![1, 2, 3, 4, 5, 6]).slice(2, 4)),
                Arc::new(Int32Array::from(vec![Some(3), None, Some(5), Some(7)])),
                None,
            ),
        ];
        for (b, c, tolerance) in cases {
            let (nb, nc) = (b.len() as u32, c.len() as u32);
            // Every pair of rows, in both orders.
            let base_rows: Vec<u32> = (0..nb).flat_map(|x| (0..nc).map(move |_| x)).collect();
            let cand_rows: Vec<u32> = (0..nb).flat_map(|_| 0..nc).collect();
            let gb = take(&b, &UInt32Array::from(base_rows.clone()), None).unwrap();
            let gc = take(&c, &UInt32Array::from(cand_rows.clone()), None).unwrap();
            let whole = changed(&gb, &gc, tolerance).unwrap();
            // The base as one chunk, and split in two after its first row.
            let one = BaseColumn::new(vec![b.clone()]);
            let one = changed_at(&one, &base_rows, &c, &cand_rows, tolerance).unwrap();
            let two_chunks = BaseColumn::new(vec![b.slice(0, 1), b.slice(1, b.len() - 1)]);
            let two_ids: Vec<u32> = base_rows
                .iter()
                .map(|&x| if x == 0 { 0 } else { first_id(1) + x - 1 })
                .collect();
            let two = changed_at(&two_chunks, &two_ids, &c, &cand_rows, tolerance).unwrap();
            for in_place in [one, two] {
                assert_eq!(
                    in_place.iter().collect::<Vec<_>>(),
                    trues(&whole),
                    "{} with tolerance {tolerance:?}",
                    b.data_type()
                );
            }
        }
    }
}
