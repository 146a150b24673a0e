//! The base side's rows, kept as the batches they were read in (not concatenated: that
//! copied the whole side once more and held it twice at the peak), and the row ids the key
//! index stores.
//!
//! A row id is `chunk << 16 | row in chunk`: a chunk holds at most 65,536 rows (a larger
//! batch is sliced, without copying) and batches of fewer than 4,096 rows are gathered into
//! one chunk (copying only those), so 65,536 chunks hold at least 268 million rows.

use datafusion::arrow::array::{ArrayRef, RecordBatch};
use datafusion::arrow::compute::{concat_batches, interleave_record_batch};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::error::ArrowError;
use serde_json::Value;

use crate::values;

const ROW_BITS: u32 = 16;
/// Rows in a chunk, at most.
const MAX_ROWS: usize = 1 << ROW_BITS;
/// Batches smaller than this are gathered into a chunk of their own.
const MIN_ROWS: usize = 4096;
/// Chunks in a side, at most.
pub const MAX_CHUNKS: usize = 1 << (32 - ROW_BITS);

/// The chunk and the row in it of a row id.
#[inline]
pub fn split(id: u32) -> (usize, usize) {
    ((id >> ROW_BITS) as usize, (id as usize) & (MAX_ROWS - 1))
}

/// The id of the first row of chunk `chunk`.
pub fn first_id(chunk: usize) -> u32 {
    (chunk as u32) << ROW_BITS
}

/// Cuts incoming batches into chunks.
#[derive(Default)]
pub struct Chunker {
    small: Vec<RecordBatch>,
    small_rows: usize,
}

impl Chunker {
    /// The chunks `batch` completes.
    pub fn push(
        &mut self,
        schema: &SchemaRef,
        batch: RecordBatch,
    ) -> Result<Vec<RecordBatch>, ArrowError> {
        let n = batch.num_rows();
        if n >= MIN_ROWS {
            return Ok((0..n)
                .step_by(MAX_ROWS)
                .map(|at| batch.slice(at, MAX_ROWS.min(n - at)))
                .collect());
        }
        self.small_rows += n;
        self.small.push(batch);
        if self.small_rows < MIN_ROWS {
            return Ok(Vec::new());
        }
        Ok(self.finish(schema)?.into_iter().collect())
    }

    /// The last chunk, of the small batches still gathered.
    pub fn finish(&mut self, schema: &SchemaRef) -> Result<Option<RecordBatch>, ArrowError> {
        if self.small.is_empty() {
            return Ok(None);
        }
        let chunk = concat_batches(schema, &self.small)?;
        self.small.clear();
        self.small_rows = 0;
        Ok(Some(chunk))
    }
}

/// The base side's chunks, with each chunk's first row ordinal (its rows' position in the
/// side, for the row-format keys stored in that order).
#[derive(Default)]
pub struct Chunks {
    batches: Vec<RecordBatch>,
    starts: Vec<u32>,
}

impl Chunks {
    pub fn len(&self) -> usize {
        self.batches.len()
    }

    /// Adds a chunk whose first row has ordinal `start`.
    pub fn push(&mut self, batch: RecordBatch, start: u32) {
        self.starts.push(start);
        self.batches.push(batch);
    }

    /// Chunk `chunk`.
    pub fn batch(&self, chunk: usize) -> &RecordBatch {
        &self.batches[chunk]
    }

    /// The position of row `id` in the side.
    #[inline]
    pub fn ordinal(&self, id: u32) -> usize {
        let (chunk, row) = split(id);
        self.starts[chunk] as usize + row
    }

    /// Column `col` of every chunk.
    pub fn column(&self, col: usize) -> Vec<ArrayRef> {
        self.batches.iter().map(|b| b.column(col).clone()).collect()
    }

    /// `{name: value}` of row `id` in the columns `names` name, from `first`.
    pub fn object(&self, names: &[String], first: usize, id: u32) -> Value {
        let (chunk, row) = split(id);
        let columns = &self.batches[chunk].columns()[first..];
        values::object(names.iter().map(String::as_str).zip(columns), row)
    }

    /// The value of column `col` in row `id`.
    pub fn value(&self, col: usize, id: u32) -> Value {
        let (chunk, row) = split(id);
        values::value(self.batches[chunk].column(col), row)
    }

    /// The rows `ids`, in that order.
    pub fn gather(&self, ids: &[u32]) -> Result<RecordBatch, ArrowError> {
        let batches: Vec<&RecordBatch> = self.batches.iter().collect();
        let at: Vec<(usize, usize)> = ids.iter().map(|&id| split(id)).collect();
        interleave_record_batch(&batches, &at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Array, Int64Array};
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use std::sync::Arc;

    fn batch(schema: &SchemaRef, from: i64, n: usize) -> RecordBatch {
        let values: Int64Array = (from..from + n as i64).collect();
        RecordBatch::try_new(schema.clone(), vec![Arc::new(values)]).unwrap()
    }

    /// Large batches are sliced, small ones gathered; every row keeps its value under its
    /// id, and ordinals count rows in chunk order.
    #[test]
    fn chunks_keep_every_row_under_its_id() {
        let schema: SchemaRef =
            Arc::new(Schema::new(vec![Field::new("v", DataType::Int64, false)]));
        let mut chunker = Chunker::default();
        let mut chunks = Chunks::default();
        let mut next = 0;
        let mut add = |chunk: RecordBatch, chunks: &mut Chunks| {
            chunks.push(chunk.clone(), next);
            next += chunk.num_rows() as u32;
        };
        let mut from = 0;
        for n in [100_000, 10, 3000, 2000, 5000, 1] {
            for chunk in chunker.push(&schema, batch(&schema, from, n)).unwrap() {
                assert!(chunk.num_rows() <= MAX_ROWS);
                add(chunk, &mut chunks);
            }
            from += n as i64;
        }
        if let Some(chunk) = chunker.finish(&schema).unwrap() {
            add(chunk, &mut chunks);
        }
        // 100,000 → 65,536 + 34,464; 10 + 3,000 + 2,000 gathered; 5,000; 1.
        assert_eq!(chunks.len(), 5);
        let mut seen = Vec::new();
        for chunk in 0..chunks.len() {
            let column = chunks.batches[chunk].column(0);
            for row in 0..column.len() {
                let id = first_id(chunk) + row as u32;
                let Value::Number(v) = chunks.value(0, id) else {
                    panic!("a number")
                };
                seen.push(v.as_i64().unwrap());
                assert_eq!(chunks.ordinal(id), seen.len() - 1);
            }
        }
        seen.sort();
        assert_eq!(seen, (0..from).collect::<Vec<_>>());
        let gathered = chunks
            .gather(&[first_id(1) + 2, first_id(0) + 7, first_id(4)])
            .unwrap();
        let values: Vec<i64> = gathered
            .column(0)
            .as_any()
            .downcast_ref::<Int64Array>()
            .unwrap()
            .values()
            .to_vec();
        assert_eq!(values, [65_538, 7, from - 1]);
    }
}
