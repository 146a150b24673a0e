//! Per-partition row counts and checksums (the partition strategy's first pass).
//!
//! A partition is a bucket of the key hash, the same on both sides. Its checksum is the
//! wrapping sum of every row's hash over all aligned columns, so it does not depend on row
//! order; equal counts and checksums mean (up to a 64-bit collision) equal partitions, which
//! are then not compared row by row. Values within a float tolerance hash differently, so
//! such a partition is compared in full and the comparison decides.

use datafusion::arrow::array::RecordBatch;
use phlo_transform_core::Diagnostic;

use crate::hashing::{bucket, hash_columns};

#[derive(Clone, Debug)]
pub struct Checksums {
    nkeys: usize,
    counts: Vec<u64>,
    sums: Vec<u64>,
    pub rows: u64,
}

impl Checksums {
    pub fn new(buckets: usize, nkeys: usize) -> Self {
        Checksums {
            nkeys,
            counts: vec![0; buckets],
            sums: vec![0; buckets],
            rows: 0,
        }
    }

    /// Adds one aligned batch.
    pub fn push(&mut self, batch: &RecordBatch) -> Result<(), Diagnostic> {
        let n = batch.num_rows();
        self.rows += n as u64;
        let keys = hash_columns(&batch.columns()[..self.nkeys], n)?;
        let all = hash_columns(batch.columns(), n)?;
        let buckets = self.counts.len();
        for (k, v) in keys.iter().zip(&all) {
            let b = bucket(*k, buckets);
            self.counts[b] += 1;
            self.sums[b] = self.sums[b].wrapping_add(*v);
        }
        Ok(())
    }

    /// Buckets whose count or checksum differs between `self` and `other`.
    pub fn differing(&self, other: &Checksums) -> Vec<bool> {
        (0..self.counts.len())
            .map(|b| self.counts[b] != other.counts[b] || self.sums[b] != other.sums[b])
            .collect()
    }
}
