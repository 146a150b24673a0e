//! How the key index holds keys: packed into a `u128` when they fit, else in Arrow's row
//! format.
//!
//! A key of fixed-width primitive columns (integers, floats, dates, times, timestamps,
//! durations) whose widths plus one validity bit per column fit in 128 bits — every single
//! integer key, and short composite ones such as (INT, BIGINT) — is packed into one `u128`
//! straight from the column buffers and kept inline in the hash-table entry: a probe then
//! touches only its bucket, and neither the row format nor a second hash pass is needed.
//! Longer keys (strings, two BIGINTs, decimals, ...) are encoded in the row format, and the
//! entry holds their hash and row number.
//!
//! The packing mirrors the row format: per column a validity bit (NULL first) then the value
//! with its sign bit flipped (floats: their total-order bits), so two packed keys are equal
//! exactly when their row encodings are (NULL-safe, floats by bits), and their big-endian
//! bytes sort as the row encodings do (samples come out in the same order on both paths).

use datafusion::arrow::array::{make_array, Array, ArrayData, ArrayRef};
use datafusion::arrow::buffer::{MutableBuffer, NullBuffer};
use datafusion::arrow::datatypes::{ArrowNativeType, DataType};
use datafusion::arrow::error::ArrowError;
use datafusion::arrow::row::Rows;

use crate::hashing::remix;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Unsigned,
    Signed,
    Float,
}

struct PackedColumn {
    data_type: DataType,
    /// Value bytes: 1, 2, 4 or 8.
    width: usize,
    kind: Kind,
}

impl PackedColumn {
    fn bits(&self) -> u32 {
        self.width as u32 * 8
    }

    fn mask(&self) -> u64 {
        u64::MAX >> (64 - self.bits())
    }

    fn sign(&self) -> u64 {
        1 << (self.bits() - 1)
    }

    fn encode(&self, v: u64) -> u64 {
        match self.kind {
            Kind::Unsigned => v,
            Kind::Signed => v ^ self.sign(),
            Kind::Float if v & self.sign() != 0 => !v & self.mask(),
            Kind::Float => v | self.sign(),
        }
    }

    fn decode(&self, e: u64) -> u64 {
        match self.kind {
            Kind::Unsigned => e,
            Kind::Signed => e ^ self.sign(),
            Kind::Float if e & self.sign() != 0 => e & !self.sign(),
            Kind::Float => !e & self.mask(),
        }
    }
}

/// Packs the keys of a fixed-width key (see the module doc).
pub struct Packer {
    columns: Vec<PackedColumn>,
}

fn packable(t: &DataType) -> Option<Kind> {
    use DataType::*;
    Some(match t {
        UInt8 | UInt16 | UInt32 | UInt64 => Kind::Unsigned,
        Int8
        | Int16
        | Int32
        | Int64
        | Date32
        | Date64
        | Time32(_)
        | Time64(_)
        | Timestamp(_, _)
        | Duration(_) => Kind::Signed,
        Float16 | Float32 | Float64 => Kind::Float,
        _ => return None,
    })
}

impl Packer {
    /// A packer for keys of these column types, if they fit in 128 bits.
    pub fn new(types: &[DataType]) -> Option<Packer> {
        let columns = types
            .iter()
            .map(|t| {
                Some(PackedColumn {
                    data_type: t.clone(),
                    width: t.primitive_width()?,
                    kind: packable(t)?,
                })
            })
            .collect::<Option<Vec<_>>>()?;
        let bits: u32 = columns.iter().map(|c| c.bits() + 1).sum();
        (!columns.is_empty() && bits <= 128).then_some(Packer { columns })
    }

    /// One packed key per row of `columns` (the key columns, of the packer's types).
    pub fn pack(&self, columns: &[ArrayRef]) -> Vec<u128> {
        let n = columns.first().map_or(0, |c| c.len());
        let mut keys = vec![0u128; n];
        for (col, array) in self.columns.iter().zip(columns) {
            match col.width {
                1 => pack_column::<u8>(&mut keys, array, col),
                2 => pack_column::<u16>(&mut keys, array, col),
                4 => pack_column::<u32>(&mut keys, array, col),
                _ => pack_column::<u64>(&mut keys, array, col),
            }
        }
        keys
    }

    /// The key columns of a packed key, as one-row arrays.
    pub fn unpack(&self, mut key: u128) -> Result<Vec<ArrayRef>, ArrowError> {
        let mut out = Vec::with_capacity(self.columns.len());
        for col in self.columns.iter().rev() {
            let encoded = (key as u64) & col.mask();
            key >>= col.bits();
            let valid = key & 1 == 1;
            key >>= 1;
            let raw = if valid { col.decode(encoded) } else { 0 };
            let mut values = MutableBuffer::new(8);
            values.extend_from_slice(&raw.to_le_bytes()[..col.width]);
            let data = ArrayData::builder(col.data_type.clone())
                .len(1)
                .add_buffer(values.into())
                .nulls((!valid).then(|| NullBuffer::new_null(1)))
                .build()?;
            out.push(make_array(data));
        }
        out.reverse();
        Ok(out)
    }
}

fn pack_column<T: ArrowNativeType + Into<u64>>(
    keys: &mut [u128],
    array: &ArrayRef,
    col: &PackedColumn,
) {
    let data = array.to_data();
    let values = &data.buffer::<T>(0)[..keys.len()];
    let shift = col.bits() + 1;
    let valid = 1u128 << col.bits();
    match array.nulls().filter(|n| n.null_count() > 0) {
        None => {
            for (k, v) in keys.iter_mut().zip(values) {
                *k = (*k << shift) | valid | col.encode((*v).into()) as u128;
            }
        }
        Some(nulls) => {
            for (i, (k, v)) in keys.iter_mut().zip(values).enumerate() {
                *k <<= shift;
                if nulls.is_valid(i) {
                    *k |= valid | col.encode((*v).into()) as u128;
                }
            }
        }
    }
}

/// The hash of a packed key (a bijection of its low half when the high half is constant, as
/// it is for every single-column key).
pub fn hash_packed(key: u128) -> u64 {
    remix((key as u64) ^ remix(((key >> 64) as u64) ^ 0x9e37_79b9_7f4a_7c15))
}

/// How an index entry's key is compared: both paths share the entry layout, its `key` being
/// the packed key or (row-format path) the key hash.
pub trait KeyView: Sync {
    /// Rows in this batch.
    fn len(&self) -> usize;
    /// The hash of row `r` of this batch.
    fn hash(&self, r: usize) -> u64;
    /// The entry key of row `r`.
    fn key(&self, r: usize) -> u128;
    /// Entry keys equal: is row `r` the key of base row `base_row`? (Always, when packed.)
    fn same_as_base(&self, base_row: u32, r: usize) -> bool;
    /// The same, for a candidate key the base lacks (`owned`: its row encoding).
    fn same_as_added(&self, owned: Option<&[u8]>, r: usize) -> bool;
    /// The row encoding to keep for a key the base lacks (row-format path only).
    fn owned(&self, r: usize) -> Option<Box<[u8]>>;
    /// The bytes samples are ordered by.
    fn sort_key(&self, r: usize) -> SortKey<'_>;
    /// The hash of an entry key (for growing the table).
    fn rehash(key: u128) -> u64;
}

/// A key's sort bytes: a packed key's big-endian bytes, or a row encoding.
pub enum SortKey<'a> {
    Packed([u8; 16]),
    Row(&'a [u8]),
}

impl AsRef<[u8]> for SortKey<'_> {
    fn as_ref(&self) -> &[u8] {
        match self {
            SortKey::Packed(b) => b,
            SortKey::Row(b) => b,
        }
    }
}

/// A batch's packed keys and their hashes.
pub struct PackedView<'a> {
    pub keys: &'a [u128],
    pub hashes: &'a [u64],
}

impl KeyView for PackedView<'_> {
    fn len(&self) -> usize {
        self.hashes.len()
    }
    #[inline]
    fn hash(&self, r: usize) -> u64 {
        self.hashes[r]
    }
    #[inline]
    fn key(&self, r: usize) -> u128 {
        self.keys[r]
    }
    #[inline]
    fn same_as_base(&self, _: u32, _: usize) -> bool {
        true
    }
    #[inline]
    fn same_as_added(&self, _: Option<&[u8]>, _: usize) -> bool {
        true
    }
    fn owned(&self, _: usize) -> Option<Box<[u8]>> {
        None
    }
    fn sort_key(&self, r: usize) -> SortKey<'_> {
        SortKey::Packed(self.keys[r].to_be_bytes())
    }
    #[inline]
    fn rehash(key: u128) -> u64 {
        hash_packed(key)
    }
}

/// A batch's keys in the row format (`rows`, from row `offset`), their hashes, and the base
/// side's row-format keys (in row ordinal order) with the ordinal of a base row id.
pub struct RowView<'a> {
    pub rows: &'a Rows,
    pub offset: usize,
    pub hashes: &'a [u64],
    pub base: &'a Rows,
    pub base_ordinal: &'a (dyn Fn(u32) -> usize + Sync),
}

impl KeyView for RowView<'_> {
    fn len(&self) -> usize {
        self.hashes.len()
    }
    #[inline]
    fn hash(&self, r: usize) -> u64 {
        self.hashes[r]
    }
    #[inline]
    fn key(&self, r: usize) -> u128 {
        self.hashes[r] as u128
    }
    #[inline]
    fn same_as_base(&self, base_row: u32, r: usize) -> bool {
        self.base.row((self.base_ordinal)(base_row)) == self.rows.row(self.offset + r)
    }
    #[inline]
    fn same_as_added(&self, owned: Option<&[u8]>, r: usize) -> bool {
        owned == Some(self.rows.row(self.offset + r).data())
    }
    fn owned(&self, r: usize) -> Option<Box<[u8]>> {
        Some(self.rows.row(self.offset + r).data().into())
    }
    fn sort_key(&self, r: usize) -> SortKey<'_> {
        SortKey::Row(self.rows.row(self.offset + r).data())
    }
    #[inline]
    fn rehash(key: u128) -> u64 {
        key as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Float64Array, Int32Array, UInt8Array};
    use datafusion::arrow::row::{RowConverter, SortField};
    use std::sync::Arc;

    /// Packed keys compare (equal and ordered) exactly as their row encodings, and unpack
    /// to the values they came from.
    #[test]
    fn packed_keys_order_and_equality_match_rows() {
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int32Array::from(vec![
                Some(-5),
                None,
                Some(i32::MIN),
                Some(i32::MAX),
                Some(0),
                Some(0),
                None,
                Some(-5),
            ])),
            Arc::new(Float64Array::from(vec![
                Some(-0.0),
                Some(0.0),
                Some(f64::NAN),
                None,
                Some(-1.5),
                Some(f64::NEG_INFINITY),
                Some(0.0),
                Some(-0.0),
            ])),
            Arc::new(UInt8Array::from(vec![
                Some(1),
                Some(255),
                None,
                Some(0),
                Some(1),
                Some(1),
                Some(255),
                Some(1),
            ])),
        ];
        let types: Vec<DataType> = columns.iter().map(|c| c.data_type().clone()).collect();
        let packer = Packer::new(&types).expect("33 + 65 + 9 bits fit");
        let packed = packer.pack(&columns);
        let converter =
            RowConverter::new(types.iter().map(|t| SortField::new(t.clone())).collect()).unwrap();
        let rows = converter.convert_columns(&columns).unwrap();
        for i in 0..packed.len() {
            for j in 0..packed.len() {
                assert_eq!(
                    packed[i].cmp(&packed[j]),
                    rows.row(i).cmp(&rows.row(j)),
                    "rows {i} and {j}"
                );
            }
            let back = packer.unpack(packed[i]).unwrap();
            for (c, b) in columns.iter().zip(&back) {
                assert_eq!(c.slice(i, 1).to_data(), b.to_data(), "row {i}");
            }
        }
        // Row 0 and row 7 are the same key; so are rows 1 and 6 (NULL equals NULL); -0.0
        // and 0.0 differ (rows 0 and 4 otherwise equal in the first and last column).
        assert_eq!(packed[0], packed[7]);
        assert_eq!(packed[1], packed[6]);
        assert_ne!(packed[4], packed[5]);
    }

    #[test]
    fn only_short_fixed_width_keys_pack() {
        assert!(Packer::new(&[DataType::Int64]).is_some());
        assert!(Packer::new(&[DataType::Int64, DataType::Int32]).is_some());
        assert!(Packer::new(&[DataType::Int64, DataType::Int64]).is_none());
        assert!(Packer::new(&[DataType::Utf8]).is_none());
        assert!(Packer::new(&[DataType::Decimal128(10, 2)]).is_none());
        assert!(Packer::new(&[]).is_none());
    }
}
