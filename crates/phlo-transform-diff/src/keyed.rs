//! The keyed comparison: a key index over the base side, the candidate side streamed
//! against it.
//!
//! The base side is indexed by key while it is read: each batch's keys are packed into a
//! `u128` (fixed-width keys that fit, see `keys`) or encoded in Arrow's row format, and
//! inserted into one index (`index`) per partition of the key hash, the partitions on
//! their own threads; equality is NULL-safe and covers composite keys of any scalar types.
//! The base batches are kept as they came (`chunks`) for the value comparison. Each
//! candidate batch is hashed, and every partition probes and compares its own rows on its
//! own thread, reading the matched values in place. Candidate batches are not kept: only
//! the keys the base lacks and the rows a sample or `--output` needs.
//!
//! A candidate row costs one probe: a key the base has is counted on its base entry (which
//! also finds a key the candidate repeats), and only a key the base lacks (an added row)
//! goes into a second, small table of its own.
//!
//! Duplicate keys are never collapsed: a key that occurs more than once on either side is
//! counted under `duplicates` (keys and rows, per side, with samples), and its rows take no
//! part in added/removed/modified. A candidate key found repeated after its first
//! occurrence was already counted has that outcome retracted.

use datafusion::arrow::array::{ArrayRef, BooleanArray, RecordBatch, StringArray, UInt32Array};
use datafusion::arrow::buffer::BooleanBuffer;
use datafusion::arrow::compute::{filter_record_batch, take_record_batch};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::row::{RowConverter, Rows, SortField};
use hashbrown::hash_table::Entry;
use hashbrown::HashTable;
use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::par;
use phlo_transform_core::Diagnostic;
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::BinaryHeap;
use std::sync::Arc;

use crate::chunks::{first_id, Chunker, Chunks, MAX_CHUNKS};
use crate::compare::{changed_at, BaseColumn};
use crate::hashing::{hash_columns, RowFilter};
use crate::index::{BaseEntry, KeyIndex};
use crate::keys::{hash_packed, KeyView, PackedView, Packer, RowView, SortKey};
use crate::schema::Alignment;
use crate::values;

/// Batches smaller than this are indexed or probed on one thread (spawning costs more).
const PARALLEL_MIN_ROWS: usize = 4096;

/// Rows gathered (base chunks, candidate batches) before they are indexed or probed
/// together, the partitions' threads spawned once for all of them. Per 8,192-row batch the
/// spawning cost more than the work; at 65,536 rows the two threads of a group still barely
/// overlapped (on 10M rows their run times summed to about the groups' wall time) and the
/// diff took 1.5–2.1 s; at 524,288 rows 1.2–1.4 s, with about 12 % less CPU (docs/performance.md).
/// A group holds its keys (24 bytes a row) and, on the candidate side, its batches.
const GROUP_ROWS: usize = 524_288;

/// A group of candidate batches is also probed once its batches hold this many bytes: a side
/// of wide rows would otherwise hold 512K of them between groups (the candidate side is
/// streamed, never held; the base side is held whole anyway).
const GROUP_BYTES: usize = 64 << 20;

/// How many rows ahead of the one being indexed or probed its index slot is prefetched:
/// enough to keep several cache misses in flight (`index`).
const PREFETCH_AHEAD: usize = 16;

/// A candidate key the base lacks.
struct AddedEntry {
    /// As `BaseEntry::key`.
    key: u128,
    /// The key's row encoding (row-format keys only).
    owned: Option<Box<[u8]>>,
    /// Candidate rows with this key.
    count: u32,
    /// The outcome slot of its first row.
    slot: u32,
}

/// What became of a candidate row. There is one per candidate row, so it is four bytes (an
/// enum with a `u32` payload would take eight: 80 MB for 10M rows): the index of the row's
/// changed-column mask when modified, otherwise one of the values at the top of the range.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Outcome(u32);

impl Outcome {
    /// Matched a base row; not compared yet.
    const PENDING: Outcome = Outcome(u32::MAX);
    const ADDED: Outcome = Outcome(u32::MAX - 1);
    const EQUAL: Outcome = Outcome(u32::MAX - 2);
    /// The key is duplicated on the base side.
    const BASE_DUPLICATE: Outcome = Outcome(u32::MAX - 3);
    /// The key turned out duplicated on the candidate side: no longer counted.
    const RETRACTED: Outcome = Outcome(u32::MAX - 4);

    /// Modified; `at` indexes its changed-column mask (there are fewer masks than candidate
    /// rows, which `push_candidate` keeps below the named outcomes).
    fn modified(at: u32) -> Outcome {
        debug_assert!(at < Outcome::RETRACTED.0);
        Outcome(at)
    }

    /// The mask index of a modified row.
    fn modified_at(self) -> Option<u32> {
        (self.0 < Outcome::RETRACTED.0).then_some(self.0)
    }
}

/// A sample row, ordered by its key's sort bytes (its row encoding, or the packed key which
/// sorts the same) so samples are the same whatever order the batches arrived in.
struct Sample {
    key: Box<[u8]>,
    slot: Option<u32>,
    value: Value,
}

impl PartialEq for Sample {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}
impl Eq for Sample {}
impl PartialOrd for Sample {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Sample {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key.cmp(&other.key)
    }
}

/// The `limit` smallest keys offered.
struct Samples {
    limit: usize,
    heap: BinaryHeap<Sample>,
}

impl Samples {
    fn new(limit: usize) -> Self {
        Samples {
            limit,
            heap: BinaryHeap::new(),
        }
    }

    /// Would a row with this key be kept? (Asked before building its JSON.)
    fn wants(&self, key: &[u8]) -> bool {
        self.limit > 0
            && (self.heap.len() < self.limit || self.heap.peek().is_some_and(|s| *key < *s.key))
    }

    fn offer(&mut self, key: &[u8], slot: Option<u32>, value: impl FnOnce() -> Value) {
        if !self.wants(key) {
            return;
        }
        self.heap.push(Sample {
            key: key.into(),
            slot,
            value: value(),
        });
        if self.heap.len() > self.limit {
            self.heap.pop();
        }
    }

    /// The samples, smallest key first.
    fn sorted(self) -> Vec<Value> {
        self.heap
            .into_sorted_vec()
            .into_iter()
            .map(|s| s.value)
            .collect()
    }
}

/// Differing rows kept for `--output`, with the outcome slot that may still be retracted.
struct Kept {
    kind: &'static str,
    side: &'static str,
    batch: RecordBatch,
    slots: Option<Vec<u32>>,
}

/// One partition of the key space: its share of the base index, the candidate keys seen,
/// and the counts.
struct Part {
    base: KeyIndex,
    added_keys: HashTable<AddedEntry>,
    outcomes: Vec<Outcome>,
    /// Changed-column bitmasks of modified rows, `words` u64s each.
    masks: Vec<u64>,
    added: u64,
    modified: u64,
    equal: u64,
    changed: Vec<u64>,
    added_samples: Samples,
    modified_samples: Samples,
    kept: Vec<Kept>,
    error: Option<Diagnostic>,
}

struct BaseSide {
    chunks: Chunks,
    /// The compared columns (after the keys), as every comparison reads them.
    compared: Vec<BaseColumn>,
    /// The keys in the row format (keys too long to pack), in row ordinal order.
    rows: Option<Rows>,
}

impl BaseSide {
    fn sort_key(&self, e: &BaseEntry) -> SortKey<'_> {
        match &self.rows {
            Some(rows) => SortKey::Row(rows.row(self.chunks.ordinal(e.row)).data()),
            None => SortKey::Packed(e.key.to_be_bytes()),
        }
    }
}

/// What the keyed comparison found.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Records {
    pub added: u64,
    pub removed: u64,
    pub modified: u64,
    pub unchanged: u64,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct DuplicateCounts {
    /// Distinct keys that occur more than once.
    pub keys: u64,
    /// Rows carrying those keys.
    pub rows: u64,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Duplicates {
    pub base: DuplicateCounts,
    pub candidate: DuplicateCounts,
    /// `{key, base_rows, candidate_rows}`.
    pub samples: Vec<Value>,
}

impl Duplicates {
    pub fn any(&self) -> bool {
        self.base.keys > 0 || self.candidate.keys > 0
    }
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct RecordSamples {
    pub added: Vec<Value>,
    pub removed: Vec<Value>,
    pub modified: Vec<Value>,
}

pub struct KeyedOutcome {
    /// Rows read (before a sample or partition filter).
    pub base_rows: u64,
    pub candidate_rows: u64,
    /// Rows the filter kept and the comparison matched.
    pub compared_base_rows: u64,
    pub compared_candidate_rows: u64,
    pub records: Records,
    /// Per compared column, in the aligned order.
    pub changed_values: Vec<(String, u64)>,
    pub duplicates: Duplicates,
    pub samples: RecordSamples,
    /// `_diff`, `_side`, then the aligned columns (when differing rows were kept).
    pub differing_rows: Option<Vec<RecordBatch>>,
}

pub struct KeyedDiff {
    nkeys: usize,
    names: Vec<String>,
    tolerances: Vec<Option<f64>>,
    schema: SchemaRef,
    converter: RowConverter,
    /// Set when the key packs into a `u128`; otherwise keys use the row format.
    packer: Option<Packer>,
    filter: Option<RowFilter>,
    sample_limit: usize,
    keep_rows: bool,
    chunker: Chunker,
    /// The base rows read so far.
    chunks: Chunks,
    /// Rows and candidate bytes in a group (`GROUP_ROWS`, `GROUP_BYTES`; tests vary them).
    group_rows: usize,
    group_bytes: usize,
    /// Chunks and rows indexed so far (the rest wait for a group).
    indexed_chunks: usize,
    indexed_rows: u64,
    /// Candidate batches waiting for a group, and their rows.
    pending: Vec<RecordBatch>,
    pending_rows: usize,
    pending_bytes: usize,
    /// Row-format keys of the base rows indexed so far (when not packed), in ordinal order.
    base_keys: Rows,
    base: Option<BaseSide>,
    parts: Vec<Part>,
    base_rows: u64,
    candidate_rows: u64,
    compared_base_rows: u64,
    compared_candidate_rows: u64,
}

fn internal(e: impl std::fmt::Display) -> Diagnostic {
    Diagnostic::error(codes::DIFF_UNREADABLE_SIDE, format!("comparing rows: {e}"))
}

/// A side with more rows than one full comparison can number (D006).
fn too_many_rows(side: &str) -> Diagnostic {
    Diagnostic::error(
        codes::DIFF_INVALID_OPTION,
        format!("the {side} side has too many rows for one full comparison"),
    )
    .with_help("use --strategy partition, sampled or aggregate")
}

fn partition_of(hash: u64, parts: usize) -> usize {
    ((hash >> 40) % parts as u64) as usize
}

/// Runs `f` for every partition, on a thread each when the batch is large enough.
fn each_part(parts: &mut [Part], rows: usize, f: impl Fn(usize, &mut Part) + Sync) {
    if parts.len() == 1 || rows < PARALLEL_MIN_ROWS {
        for (pi, part) in parts.iter_mut().enumerate() {
            f(pi, part);
        }
    } else {
        std::thread::scope(|s| {
            for (pi, part) in parts.iter_mut().enumerate() {
                let f = &f;
                s.spawn(move || f(pi, part));
            }
        });
    }
}

/// A batch's packed keys and their hashes.
fn packed_keys(packer: &Packer, key_columns: &[ArrayRef]) -> (Vec<u128>, Vec<u64>) {
    let keys = packer.pack(key_columns);
    let hashes = keys.iter().map(|k| hash_packed(*k)).collect();
    (keys, hashes)
}

/// The packed keys and hashes of a group's batches (their key columns), on every core when
/// the group is large enough: on the one thread that feeds the partitions, the packing was a
/// serial step of every group before its partitions started.
fn group_keys(
    packer: &Packer,
    key_columns: Vec<&[ArrayRef]>,
    rows: usize,
) -> Vec<(Vec<u128>, Vec<u64>)> {
    let min_items = if rows < PARALLEL_MIN_ROWS {
        usize::MAX
    } else {
        2
    };
    par::map(key_columns, min_items, |columns| {
        packed_keys(packer, columns)
    })
}

/// Probes every batch of a group, each partition on its thread.
fn probe_all<V: KeyView>(parts: &mut [Part], probes: &[Probe<'_, V>], rows: usize) {
    each_part(parts, rows, |pi, part| {
        for probe in probes {
            part.probe(probe, pi);
        }
    });
}

impl KeyedDiff {
    /// A comparison of batches aligned by `alignment` (keys first). `filter` restricts both
    /// sides to the same keys (sampled and partition strategies). `base_rows_hint`: the
    /// expected number of base rows, if known, to size the index once.
    pub fn new(
        alignment: &Alignment,
        filter: Option<RowFilter>,
        sample_limit: usize,
        keep_rows: bool,
        base_rows_hint: Option<usize>,
    ) -> Result<Self, Diagnostic> {
        let nkeys = alignment.key.len();
        let key_types: Vec<DataType> = alignment.schema.fields()[..nkeys]
            .iter()
            .map(|f| f.data_type().clone())
            .collect();
        let converter = RowConverter::new(key_types.iter().cloned().map(SortField::new).collect())
            .map_err(|e| {
                Diagnostic::error(
                    codes::DIFF_INCOMPATIBLE_TYPES,
                    format!("these key columns cannot be compared: {e}"),
                )
                .with_help("diff on key columns of a scalar type")
            })?;
        let packer = Packer::new(&key_types);
        let threads = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
            .clamp(1, 16);
        let ncols = alignment.compared.len();
        // Sized for the expected base rows; a sampled side keeps a fraction of them. The
        // outcomes (one per candidate row) are reserved as many and a sixteenth more (the
        // sides are usually close in size, the partitions not exactly even): growing one
        // by doubling copied it and touched twice its memory.
        let expected = match (&filter, base_rows_hint) {
            (None, Some(n)) => n / threads + 1,
            _ => 0,
        };
        let parts = (0..threads)
            .map(|_| Part {
                base: KeyIndex::with_capacity(expected),
                added_keys: HashTable::new(),
                outcomes: Vec::with_capacity(expected + expected / 16),
                masks: Vec::new(),
                added: 0,
                modified: 0,
                equal: 0,
                changed: vec![0; ncols],
                added_samples: Samples::new(sample_limit),
                modified_samples: Samples::new(sample_limit),
                kept: Vec::new(),
                error: None,
            })
            .collect();
        Ok(KeyedDiff {
            nkeys,
            names: alignment
                .schema
                .fields()
                .iter()
                .map(|f| f.name().clone())
                .collect(),
            tolerances: alignment.compared.iter().map(|c| c.tolerance).collect(),
            schema: alignment.schema.clone(),
            base_keys: converter.empty_rows(0, 0),
            converter,
            packer,
            filter,
            sample_limit,
            keep_rows,
            chunker: Chunker::default(),
            chunks: Chunks::default(),
            group_rows: GROUP_ROWS,
            group_bytes: GROUP_BYTES,
            indexed_chunks: 0,
            indexed_rows: 0,
            pending: Vec::new(),
            pending_rows: 0,
            pending_bytes: 0,
            base: None,
            parts,
            base_rows: 0,
            candidate_rows: 0,
            compared_base_rows: 0,
            compared_candidate_rows: 0,
        })
    }

    fn filtered(&self, batch: RecordBatch) -> Result<RecordBatch, Diagnostic> {
        match &self.filter {
            Some(f) => f.apply(batch, self.nkeys),
            None => Ok(batch),
        }
    }

    /// One aligned batch of the base side: indexed now, kept for the comparison.
    pub fn push_base(&mut self, batch: RecordBatch) -> Result<(), Diagnostic> {
        self.base_rows += batch.num_rows() as u64;
        let batch = self.filtered(batch)?;
        if batch.num_rows() == 0 {
            return Ok(());
        }
        for chunk in self.chunker.push(&self.schema, batch).map_err(internal)? {
            self.keep_chunk(chunk)?;
        }
        if self.compared_base_rows - self.indexed_rows >= self.group_rows as u64 {
            self.index_pending()?;
        }
        Ok(())
    }

    /// Keeps a chunk of base rows, to be indexed with its group.
    fn keep_chunk(&mut self, chunk: RecordBatch) -> Result<(), Diagnostic> {
        let n = chunk.num_rows();
        let ordinal = self.compared_base_rows;
        if ordinal + n as u64 > u32::MAX as u64 || self.chunks.len() == MAX_CHUNKS {
            return Err(too_many_rows("base"));
        }
        self.chunks.push(chunk, ordinal as u32);
        self.compared_base_rows += n as u64;
        Ok(())
    }

    /// Indexes the chunks kept since the last group.
    fn index_pending(&mut self) -> Result<(), Diagnostic> {
        let group = self.indexed_chunks..self.chunks.len();
        let rows = (self.compared_base_rows - self.indexed_rows) as usize;
        self.indexed_chunks = group.end;
        self.indexed_rows = self.compared_base_rows;
        let nparts = self.parts.len();
        let key_columns = |c: usize| &self.chunks.batch(c).columns()[..self.nkeys];
        match &self.packer {
            Some(packer) => {
                let keys = group_keys(packer, group.clone().map(key_columns).collect(), rows);
                let views: Vec<PackedView> = keys
                    .iter()
                    .map(|(keys, hashes)| PackedView { keys, hashes })
                    .collect();
                each_part(&mut self.parts, rows, |pi, part| {
                    for (view, c) in views.iter().zip(group.clone()) {
                        part.insert_base(view, first_id(c), pi, nparts);
                    }
                });
            }
            None => {
                let mut hashes = Vec::new();
                for c in group.clone() {
                    self.converter
                        .append(&mut self.base_keys, key_columns(c))
                        .map_err(internal)?;
                    hashes.push(hash_columns(
                        key_columns(c),
                        self.chunks.batch(c).num_rows(),
                    )?);
                }
                let ordinal = |id| self.chunks.ordinal(id);
                let views: Vec<RowView> = hashes
                    .iter()
                    .zip(group.clone())
                    .map(|(hashes, c)| RowView {
                        rows: &self.base_keys,
                        offset: self.chunks.ordinal(first_id(c)),
                        hashes,
                        base: &self.base_keys,
                        base_ordinal: &ordinal,
                    })
                    .collect();
                each_part(&mut self.parts, rows, |pi, part| {
                    for (view, c) in views.iter().zip(group.clone()) {
                        part.insert_base(view, first_id(c), pi, nparts);
                    }
                });
            }
        }
        Ok(())
    }

    /// Ends the base side; call once, after the last `push_base`.
    pub fn finish_base(&mut self) -> Result<(), Diagnostic> {
        if let Some(chunk) = self.chunker.finish(&self.schema).map_err(internal)? {
            self.keep_chunk(chunk)?;
        }
        self.index_pending()?;
        let rows = self
            .packer
            .is_none()
            .then(|| std::mem::replace(&mut self.base_keys, self.converter.empty_rows(0, 0)));
        let chunks = std::mem::take(&mut self.chunks);
        let compared = (self.nkeys..self.names.len())
            .map(|col| BaseColumn::new(chunks.column(col)))
            .collect();
        self.base = Some(BaseSide {
            chunks,
            compared,
            rows,
        });
        Ok(())
    }

    /// One aligned batch of the candidate side (after `finish_base`).
    pub fn push_candidate(&mut self, batch: RecordBatch) -> Result<(), Diagnostic> {
        self.candidate_rows += batch.num_rows() as u64;
        let batch = self.filtered(batch)?;
        let n = batch.num_rows();
        self.compared_candidate_rows += n as u64;
        if n == 0 {
            return Ok(());
        }
        // A candidate row's outcome slot is a `u32` below the named outcomes.
        if self.compared_candidate_rows >= Outcome::RETRACTED.0 as u64 {
            return Err(too_many_rows("candidate"));
        }
        self.pending_rows += n;
        self.pending_bytes += batch.get_array_memory_size();
        self.pending.push(batch);
        if self.pending_rows >= self.group_rows || self.pending_bytes >= self.group_bytes {
            self.probe_pending()?;
        }
        Ok(())
    }

    /// Probes and compares the candidate batches gathered since the last group.
    fn probe_pending(&mut self) -> Result<(), Diagnostic> {
        let batches = std::mem::take(&mut self.pending);
        let rows = std::mem::take(&mut self.pending_rows);
        self.pending_bytes = 0;
        let base = self
            .base
            .as_ref()
            .expect("finish_base before push_candidate");
        let common = |batch| Common {
            batch,
            base,
            nkeys: self.nkeys,
            names: &self.names,
            tolerances: &self.tolerances,
            keep_rows: self.keep_rows,
            nparts: self.parts.len(),
        };
        let key_columns = |b: &RecordBatch| b.columns()[..self.nkeys].to_vec();
        match &self.packer {
            Some(packer) => {
                let columns = batches.iter().map(|b| &b.columns()[..self.nkeys]).collect();
                let keys = group_keys(packer, columns, rows);
                let probes: Vec<Probe<PackedView>> = batches
                    .iter()
                    .zip(&keys)
                    .map(|(batch, (keys, hashes))| Probe {
                        common: common(batch),
                        view: PackedView { keys, hashes },
                    })
                    .collect();
                probe_all(&mut self.parts, &probes, rows);
            }
            None => {
                let mut keys: Vec<(Rows, Vec<u64>)> = Vec::with_capacity(batches.len());
                for b in &batches {
                    let columns = key_columns(b);
                    let rows = self.converter.convert_columns(&columns).map_err(internal)?;
                    keys.push((rows, hash_columns(&columns, b.num_rows())?));
                }
                let ordinal = |id| base.chunks.ordinal(id);
                let probes: Vec<Probe<RowView>> = batches
                    .iter()
                    .zip(&keys)
                    .map(|(batch, (rows, hashes))| Probe {
                        common: common(batch),
                        view: RowView {
                            rows,
                            offset: 0,
                            hashes,
                            base: base.rows.as_ref().expect("row-format base keys"),
                            base_ordinal: &ordinal,
                        },
                    })
                    .collect();
                probe_all(&mut self.parts, &probes, rows);
            }
        }
        match self.parts.iter_mut().find_map(|p| p.error.take()) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// The key of a candidate key the base lacks, as `{column: value}`.
    fn added_key_value(&self, e: &AddedEntry) -> Value {
        let arrays = match (&self.packer, &e.owned) {
            (Some(packer), _) => packer.unpack(e.key).ok(),
            (None, Some(bytes)) => {
                let parser = self.converter.parser();
                self.converter.convert_rows([parser.parse(bytes)]).ok()
            }
            (None, None) => None,
        };
        arrays
            .map(|arrays| {
                values::object(
                    self.names[..self.nkeys]
                        .iter()
                        .map(String::as_str)
                        .zip(&arrays),
                    0,
                )
            })
            .unwrap_or(Value::Null)
    }

    /// Counts removed rows and duplicates, and assembles the outcome.
    pub fn finish(mut self) -> Result<KeyedOutcome, Diagnostic> {
        self.probe_pending()?;
        let base = self.base.as_ref().expect("finish_base before finish");
        let key_of = |id: u32| base.chunks.object(&self.names[..self.nkeys], 0, id);
        let mut records = Records::default();
        let mut changed = vec![0u64; self.names.len() - self.nkeys];
        let mut duplicates = Duplicates::default();
        let mut removed_samples = Samples::new(self.sample_limit);
        let mut dup_samples = Samples::new(self.sample_limit);
        let mut removed_rows: Vec<u32> = Vec::new();
        for part in &self.parts {
            records.added += part.added;
            records.modified += part.modified;
            records.unchanged += part.equal;
            for (total, n) in changed.iter_mut().zip(&part.changed) {
                *total += n;
            }
            for e in part.base.iter() {
                if e.matched > 1 {
                    duplicates.candidate.keys += 1;
                    duplicates.candidate.rows += e.matched as u64;
                }
                if e.count > 1 {
                    duplicates.base.keys += 1;
                    duplicates.base.rows += e.count as u64;
                }
                if e.count > 1 || e.matched > 1 {
                    dup_samples.offer(base.sort_key(e).as_ref(), None, || {
                        json!({"key": key_of(e.row), "base_rows": e.count, "candidate_rows": e.matched})
                    });
                } else if e.matched == 0 {
                    records.removed += 1;
                    removed_samples.offer(base.sort_key(e).as_ref(), None, || {
                        json!({"key": key_of(e.row), "values": base.chunks.object(&self.names[self.nkeys..], self.nkeys, e.row)})
                    });
                    if self.keep_rows {
                        removed_rows.push(e.row);
                    }
                }
            }
            // Keys the base lacks, repeated by the candidate.
            for c in part.added_keys.iter().filter(|c| c.count > 1) {
                duplicates.candidate.keys += 1;
                duplicates.candidate.rows += c.count as u64;
                let key = match &c.owned {
                    Some(bytes) => SortKey::Row(bytes),
                    None => SortKey::Packed(c.key.to_be_bytes()),
                };
                dup_samples.offer(key.as_ref(), None, || {
                    json!({"key": self.added_key_value(c), "base_rows": 0, "candidate_rows": c.count})
                });
            }
        }
        duplicates.samples = dup_samples.sorted();
        let base = self.base.expect("finish_base before finish");
        // Slots are per partition: a sample is checked against its own partition only.
        let mut added = Vec::new();
        let mut modified = Vec::new();
        let mut kept = Vec::new();
        for part in self.parts {
            let Part {
                outcomes,
                added_samples,
                modified_samples,
                kept: part_kept,
                ..
            } = part;
            let is_live = |s: &Sample| {
                s.slot
                    .is_none_or(|slot| outcomes[slot as usize] != Outcome::RETRACTED)
            };
            added.extend(added_samples.heap.into_vec().into_iter().filter(is_live));
            modified.extend(modified_samples.heap.into_vec().into_iter().filter(is_live));
            for k in part_kept {
                let batch = match &k.slots {
                    Some(slots) => {
                        let mask: BooleanArray = slots
                            .iter()
                            .map(|s| Some(outcomes[*s as usize] != Outcome::RETRACTED))
                            .collect();
                        filter_record_batch(&k.batch, &mask).map_err(internal)?
                    }
                    None => k.batch,
                };
                kept.push((k.kind, k.side, batch));
            }
        }
        added.sort();
        modified.sort();
        let samples = RecordSamples {
            added: added
                .into_iter()
                .take(self.sample_limit)
                .map(|s| s.value)
                .collect(),
            removed: removed_samples.sorted(),
            modified: modified
                .into_iter()
                .take(self.sample_limit)
                .map(|s| s.value)
                .collect(),
        };
        let differing_rows = if self.keep_rows {
            removed_rows.sort_unstable();
            let removed = base.chunks.gather(&removed_rows).map_err(internal)?;
            kept.push(("removed", "base", removed));
            Some(
                kept.into_iter()
                    .map(|(kind, side, batch)| labelled(kind, side, batch))
                    .collect::<Result<Vec<_>, _>>()?,
            )
        } else {
            None
        };
        Ok(KeyedOutcome {
            base_rows: self.base_rows,
            candidate_rows: self.candidate_rows,
            compared_base_rows: self.compared_base_rows,
            compared_candidate_rows: self.compared_candidate_rows,
            records,
            changed_values: self.names[self.nkeys..]
                .iter()
                .cloned()
                .zip(changed)
                .collect(),
            duplicates,
            samples,
            differing_rows,
        })
    }
}

/// The `--output` schema: `_diff`, `_side`, then the aligned columns.
pub fn output_schema(aligned: &Schema) -> SchemaRef {
    let mut fields = vec![
        Field::new("_diff", DataType::Utf8, false),
        Field::new("_side", DataType::Utf8, false),
    ];
    fields.extend(aligned.fields().iter().map(|f| f.as_ref().clone()));
    Arc::new(Schema::new(fields))
}

fn labelled(kind: &str, side: &str, batch: RecordBatch) -> Result<RecordBatch, Diagnostic> {
    let n = batch.num_rows();
    let mut columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from(vec![kind; n])),
        Arc::new(StringArray::from(vec![side; n])),
    ];
    columns.extend(batch.columns().iter().cloned());
    RecordBatch::try_new(output_schema(&batch.schema()), columns).map_err(internal)
}

/// What every partition's thread reads while probing one candidate batch, whatever the keys.
struct Common<'a> {
    batch: &'a RecordBatch,
    base: &'a BaseSide,
    nkeys: usize,
    names: &'a [String],
    tolerances: &'a [Option<f64>],
    keep_rows: bool,
    nparts: usize,
}

/// One candidate batch and its keys.
struct Probe<'a, V> {
    common: Common<'a>,
    view: V,
}

impl Part {
    /// Indexes this partition's rows of a base chunk whose first row has id `first`.
    fn insert_base<V: KeyView>(&mut self, v: &V, first: u32, pi: usize, nparts: usize) {
        for r in 0..v.len() {
            self.prefetch(v, r + PREFETCH_AHEAD, pi, nparts);
            let h = v.hash(r);
            if partition_of(h, nparts) != pi {
                continue;
            }
            self.base.add(
                h,
                v.key(r),
                first + r as u32,
                |row| v.same_as_base(row, r),
                V::rehash,
            );
        }
    }

    /// Prefetches the index slot of row `r`, if the batch has it and it is this partition's.
    #[inline]
    fn prefetch<V: KeyView>(&self, v: &V, r: usize, pi: usize, nparts: usize) {
        if r < v.len() {
            let h = v.hash(r);
            if partition_of(h, nparts) == pi {
                self.base.prefetch(h);
            }
        }
    }

    fn retract(&mut self, slot: u32, words: usize) {
        let outcome = self.outcomes[slot as usize];
        if outcome == Outcome::ADDED {
            self.added -= 1;
        } else if outcome == Outcome::EQUAL {
            self.equal -= 1;
        } else if let Some(at) = outcome.modified_at() {
            self.modified -= 1;
            let mask = &self.masks[at as usize * words..(at as usize + 1) * words];
            for (c, n) in self.changed.iter_mut().enumerate() {
                if mask[c / 64] & (1 << (c % 64)) != 0 {
                    *n -= 1;
                }
            }
        }
        self.outcomes[slot as usize] = Outcome::RETRACTED;
    }

    fn probe<V: KeyView>(&mut self, p: &Probe<'_, V>, pi: usize) {
        if let Err(e) = self.probe_inner(p, pi) {
            self.error = Some(e);
        }
    }

    fn probe_inner<V: KeyView>(&mut self, p: &Probe<'_, V>, pi: usize) -> Result<(), Diagnostic> {
        let (c, v) = (&p.common, &p.view);
        let ncols = self.changed.len();
        let words = ncols.div_ceil(64).max(1);
        let mut pair_cand: Vec<u32> = Vec::new();
        let mut pair_base: Vec<u32> = Vec::new();
        let mut pair_slot: Vec<u32> = Vec::new();
        let mut added_rows: Vec<u32> = Vec::new();
        let mut added_slots: Vec<u32> = Vec::new();
        for r in 0..v.len() {
            self.prefetch(v, r + PREFETCH_AHEAD, pi, c.nparts);
            let h = v.hash(r);
            if partition_of(h, c.nparts) != pi {
                continue;
            }
            let key = v.key(r);
            let slot = self.outcomes.len() as u32;
            if let Some(b) = self.base.find_mut(h, key, |row| v.same_as_base(row, r)) {
                b.matched += 1;
                if b.matched > 1 {
                    // The candidate repeats the key: its first row no longer counts.
                    if b.matched == 2 {
                        let first = b.slot;
                        self.retract(first, words);
                    }
                    continue;
                }
                b.slot = slot;
                if b.count > 1 {
                    self.outcomes.push(Outcome::BASE_DUPLICATE);
                } else {
                    self.outcomes.push(Outcome::PENDING);
                    pair_cand.push(r as u32);
                    pair_base.push(b.row);
                    pair_slot.push(slot);
                }
                continue;
            }
            match self.added_keys.entry(
                h,
                |e| e.key == key && v.same_as_added(e.owned.as_deref(), r),
                |e| V::rehash(e.key),
            ) {
                Entry::Occupied(mut o) => {
                    let e = o.get_mut();
                    e.count += 1;
                    if e.count == 2 {
                        let first = e.slot;
                        self.retract(first, words);
                    }
                    continue;
                }
                Entry::Vacant(vacant) => {
                    vacant.insert(AddedEntry {
                        key,
                        owned: v.owned(r),
                        count: 1,
                        slot,
                    });
                }
            }
            self.outcomes.push(Outcome::ADDED);
            self.added += 1;
            added_rows.push(r as u32);
            added_slots.push(slot);
            self.added_samples.offer(v.sort_key(r).as_ref(), Some(slot), || {
                json!({
                    "key": values::object(c.names[..c.nkeys].iter().map(String::as_str).zip(&c.batch.columns()[..c.nkeys]), r),
                    "values": values::object(c.names[c.nkeys..].iter().map(String::as_str).zip(&c.batch.columns()[c.nkeys..]), r),
                })
            });
        }
        if c.keep_rows && !added_rows.is_empty() {
            let batch =
                take_record_batch(c.batch, &UInt32Array::from(added_rows)).map_err(internal)?;
            self.kept.push(Kept {
                kind: "added",
                side: "candidate",
                batch,
                slots: Some(added_slots),
            });
        }
        if pair_cand.is_empty() {
            return Ok(());
        }
        self.compare(p, &pair_cand, &pair_base, &pair_slot, words)
    }

    /// Compares matched pairs column by column, reading both sides in place, then records
    /// each pair's outcome.
    fn compare<V: KeyView>(
        &mut self,
        p: &Probe<'_, V>,
        pair_cand: &[u32],
        pair_base: &[u32],
        pair_slot: &[u32],
        words: usize,
    ) -> Result<(), Diagnostic> {
        let c = &p.common;
        let base = &c.base.chunks;
        let mut masks: Vec<BooleanBuffer> = Vec::with_capacity(self.changed.len());
        for (i, tolerance) in c.tolerances.iter().enumerate() {
            let col = c.nkeys + i;
            masks.push(
                changed_at(
                    &c.base.compared[i],
                    pair_base,
                    c.batch.column(col),
                    pair_cand,
                    *tolerance,
                )
                .map_err(internal)?,
            );
        }
        let any = match masks.split_first() {
            None => BooleanBuffer::new_unset(pair_cand.len()),
            Some((first, rest)) => rest.iter().fold(first.clone(), |acc, m| &acc | m),
        };
        let mut kept_base: Vec<u32> = Vec::new();
        let mut kept_cand: Vec<u32> = Vec::new();
        let mut kept_slots: Vec<u32> = Vec::new();
        for (i, &slot) in pair_slot.iter().enumerate() {
            if self.outcomes[slot as usize] != Outcome::PENDING {
                continue; // retracted: the key repeats later in this batch
            }
            if !any.value(i) {
                self.outcomes[slot as usize] = Outcome::EQUAL;
                self.equal += 1;
                continue;
            }
            let at = (self.masks.len() / words) as u32;
            let mut mask = vec![0u64; words];
            for (col, m) in masks.iter().enumerate() {
                if m.value(i) {
                    mask[col / 64] |= 1 << (col % 64);
                    self.changed[col] += 1;
                }
            }
            self.masks.extend_from_slice(&mask);
            self.outcomes[slot as usize] = Outcome::modified(at);
            self.modified += 1;
            let (b, r) = (pair_base[i], pair_cand[i] as usize);
            self.modified_samples.offer(p.view.sort_key(r).as_ref(), Some(slot), || {
                let mut changes = serde_json::Map::new();
                for (m_i, m) in masks.iter().enumerate() {
                    if m.value(i) {
                        let col = c.nkeys + m_i;
                        changes.insert(
                            c.names[col].clone(),
                            json!({"base": base.value(col, b), "candidate": values::value(c.batch.column(col), r)}),
                        );
                    }
                }
                json!({
                    "key": values::object(c.names[..c.nkeys].iter().map(String::as_str).zip(&c.batch.columns()[..c.nkeys]), r),
                    "changes": changes,
                })
            });
            if c.keep_rows {
                kept_base.push(b);
                kept_cand.push(r as u32);
                kept_slots.push(slot);
            }
        }
        if !kept_slots.is_empty() {
            let base_rows = base.gather(&kept_base).map_err(internal)?;
            let cand_rows =
                take_record_batch(c.batch, &UInt32Array::from(kept_cand)).map_err(internal)?;
            for (side, batch) in [("base", base_rows), ("candidate", cand_rows)] {
                self.kept.push(Kept {
                    kind: "modified",
                    side,
                    batch,
                    slots: Some(kept_slots.clone()),
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::DiffOptions;
    use crate::schema::Side;
    use datafusion::arrow::array::{Float64Array, Int32Array, Int64Array, StringViewArray};

    /// One side's rows: (k1, k2, v, s, f).
    type Row = (Option<i64>, Option<i32>, i64, String, f64);

    fn batches(rows: &[Row], batch_rows: usize) -> Vec<RecordBatch> {
        let schema = Arc::new(Schema::new(vec![
            Field::new("k1", DataType::Int64, true),
            Field::new("k2", DataType::Int32, true),
            Field::new("v", DataType::Int64, true),
            Field::new("s", DataType::Utf8View, true),
            Field::new("f", DataType::Float64, true),
        ]));
        rows.chunks(batch_rows)
            .map(|chunk| {
                let columns: Vec<ArrayRef> = vec![
                    Arc::new(Int64Array::from_iter(chunk.iter().map(|r| r.0))),
                    Arc::new(Int32Array::from_iter(chunk.iter().map(|r| r.1))),
                    Arc::new(Int64Array::from_iter_values(chunk.iter().map(|r| r.2))),
                    Arc::new(StringViewArray::from_iter_values(
                        chunk.iter().map(|r| r.3.as_str()),
                    )),
                    Arc::new(Float64Array::from_iter_values(chunk.iter().map(|r| r.4))),
                ];
                RecordBatch::try_new(schema.clone(), columns).unwrap()
            })
            .collect()
    }

    /// Base and candidate with every kind of difference: modified values (short and long
    /// strings, floats within and beyond the tolerance), removed and added rows, NULLs in
    /// the key, keys duplicated on either side (in one batch and across batches, added keys
    /// too).
    fn sides() -> (Vec<Row>, Vec<Row>) {
        let row = |i: i64| -> Row {
            (
                (i % 1000 != 5).then_some(i),
                if i % 1000 == 5 {
                    Some(-(i as i32)) // keeps the composite keys with a NULL unique
                } else {
                    (i % 13 != 0).then_some((i % 7) as i32)
                },
                i,
                if i % 3 == 0 {
                    format!("a string longer than twelve bytes {i}")
                } else {
                    format!("s{}", i % 50)
                },
                i as f64 / 4.0,
            )
        };
        let mut base: Vec<Row> = (0..10_000).map(row).collect();
        base.push(row(20)); // a base duplicate
        base.push(row(21));
        base.push(row(21));
        let mut cand: Vec<Row> = Vec::new();
        for i in 0..10_000 {
            if i % 77 == 0 {
                continue; // removed
            }
            let mut r = row(i);
            if i % 50 == 0 {
                r.2 += 1;
            }
            if i % 60 == 0 {
                r.3.push('!');
            }
            if i % 45 == 0 {
                r.4 += 0.0001; // within the tolerance
            }
            if i % 95 == 0 {
                r.4 += 1.0;
            }
            cand.push(r);
        }
        cand.extend((10_000..10_100).map(row)); // added
        cand.push(row(30)); // a candidate duplicate, across batches
        cand.push(row(10_050)); // an added key, repeated
        cand.insert(4, row(4)); // in the same batch
        (base, cand)
    }

    /// Groups as the comparison makes them.
    const DEFAULT_GROUP: (usize, usize) = (GROUP_ROWS, GROUP_BYTES);

    fn run(
        packed: bool,
        key: &[&str],
        batch_rows: usize,
        (group_rows, group_bytes): (usize, usize),
    ) -> (KeyedOutcome, bool) {
        let (base, cand) = sides();
        let (base, cand) = (batches(&base, batch_rows), batches(&cand, batch_rows));
        let mut opts = DiffOptions {
            key: key.iter().map(|k| k.to_string()).collect(),
            ..DiffOptions::default()
        };
        opts.tolerances.insert("f".into(), 0.001);
        let alignment = Alignment::new(&base[0].schema(), &cand[0].schema(), &opts).unwrap();
        let mut diff = KeyedDiff::new(&alignment, None, 5, true, Some(10_003)).unwrap();
        if !packed {
            diff.packer = None;
        }
        diff.group_rows = group_rows;
        diff.group_bytes = group_bytes;
        let was_packed = diff.packer.is_some();
        for b in &base {
            diff.push_base(alignment.project(b, Side::Base).unwrap())
                .unwrap();
        }
        diff.finish_base().unwrap();
        for c in &cand {
            diff.push_candidate(alignment.project(c, Side::Candidate).unwrap())
                .unwrap();
        }
        (diff.finish().unwrap(), was_packed)
    }

    fn summary(o: &KeyedOutcome) -> Value {
        // Every differing row (batches are split by partition, which depends on the hash).
        let mut rows: Vec<String> = o
            .differing_rows
            .as_ref()
            .unwrap()
            .iter()
            .flat_map(|b| {
                (0..b.num_rows()).map(move |r| {
                    b.columns()
                        .iter()
                        .map(|c| values::value(c, r).to_string())
                        .collect::<Vec<_>>()
                        .join("|")
                })
            })
            .collect();
        rows.sort();
        json!({
            "records": o.records,
            "changed": o.changed_values,
            "duplicates": o.duplicates,
            "samples": o.samples,
            "rows": rows,
        })
    }

    /// The packed key path and the row-format path report exactly the same, on one thread
    /// (small batches) and on several (large ones), with NULL keys and duplicates.
    #[test]
    fn packed_and_row_format_keys_report_the_same() {
        for batch_rows in [1000, 5000] {
            let (packed, was_packed) = run(true, &["k1", "k2"], batch_rows, DEFAULT_GROUP);
            assert!(was_packed, "(BIGINT, INT) packs into 98 bits");
            let (rows, was_packed) = run(false, &["k1", "k2"], batch_rows, DEFAULT_GROUP);
            assert!(!was_packed);
            assert_eq!(summary(&packed), summary(&rows));
            let r = &packed.records;
            // 130 removed (i % 77), 100 added minus the repeated one; 2 base duplicate keys
            // (20: 2 rows, 21: 3 rows); 3 candidate duplicate keys (4, 30, 10050).
            assert_eq!(r.removed, 130);
            assert_eq!(r.added, 99);
            assert_eq!(packed.duplicates.base.keys, 2);
            assert_eq!(packed.duplicates.base.rows, 5);
            assert_eq!(packed.duplicates.candidate.keys, 3);
            assert_eq!(packed.duplicates.candidate.rows, 6);
            assert_eq!(packed.samples.added.len(), 5);
            assert!(r.modified > 0 && r.unchanged > 9000);
        }
    }

    /// Batches indexed and probed in groups report the same as one at a time: groups of one
    /// batch (on one thread), of five (on several), of a few candidate batches by their bytes,
    /// of the whole side.
    #[test]
    fn groups_of_batches_report_the_same() {
        for packed in [true, false] {
            let (whole, _) = run(packed, &["k1", "k2"], 1000, DEFAULT_GROUP);
            for group in [(1, usize::MAX), (5000, usize::MAX), (usize::MAX, 100_000)] {
                let (grouped, _) = run(packed, &["k1", "k2"], 1000, group);
                assert_eq!(summary(&grouped), summary(&whole), "groups of {group:?}");
            }
        }
    }

    /// An outcome is four bytes, and a mask index is never taken for a named outcome.
    #[test]
    fn outcomes_are_four_bytes_and_tell_modified_rows_apart() {
        assert_eq!(std::mem::size_of::<Outcome>(), 4);
        for at in [0, 1, Outcome::RETRACTED.0 - 1] {
            assert_eq!(Outcome::modified(at).modified_at(), Some(at));
        }
        for named in [
            Outcome::PENDING,
            Outcome::ADDED,
            Outcome::EQUAL,
            Outcome::BASE_DUPLICATE,
            Outcome::RETRACTED,
        ] {
            assert_eq!(named.modified_at(), None);
        }
    }

    /// A single key column with NULLs: NULL matches NULL (one key, here duplicated).
    #[test]
    fn null_keys_match_on_the_packed_path() {
        let (packed, was_packed) = run(true, &["k1"], 5000, DEFAULT_GROUP);
        assert!(was_packed);
        let (rows, _) = run(false, &["k1"], 5000, DEFAULT_GROUP);
        assert_eq!(summary(&packed), summary(&rows));
        // k1 is NULL on rows 5, 1005, ..., 9005: ten base rows; the candidate lacks 5005 and
        // adds 10005: ten rows, one key.
        let nulls = packed
            .duplicates
            .samples
            .iter()
            .find(|s| s["key"]["k1"].is_null())
            .expect("the NULL key is a duplicate");
        assert_eq!(nulls["base_rows"], 10);
        assert_eq!(nulls["candidate_rows"], 10);
    }
}
