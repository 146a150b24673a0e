//! The keyed comparison: a key index over the base side, the candidate side streamed
//! against it.
//!
//! The base side is collected (aligned batches, concatenated once) and indexed by key: one
//! `hashbrown::HashTable` per partition of the key hash, built in parallel, holding row
//! numbers and keys encoded in Arrow's row format (so equality is NULL-safe and covers
//! composite keys of any scalar types). Each candidate batch is hashed, and every partition
//! probes, gathers and compares its own rows on its own thread. Candidate batches are not
//! kept: only the keys the base lacks and the rows a sample or `--output` needs.
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
use datafusion::arrow::compute::{concat_batches, filter_record_batch, or, take_record_batch};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::row::{OwnedRow, RowConverter, Rows, SortField};
use hashbrown::HashTable;
use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::BinaryHeap;
use std::sync::Arc;

use crate::compare::changed;
use crate::hashing::{hash_columns, RowFilter};
use crate::schema::Alignment;
use crate::values;

/// Candidate batches smaller than this are probed on one thread (spawning costs more).
const PARALLEL_MIN_ROWS: usize = 4096;

#[derive(Clone, Copy)]
struct BaseEntry {
    hash: u64,
    row: u32,
    /// Base rows with this key.
    count: u32,
    /// Candidate rows with this key.
    matched: u32,
    /// The outcome slot of the first candidate row with this key.
    slot: u32,
}

/// A candidate key the base lacks.
struct AddedEntry {
    hash: u64,
    key: OwnedRow,
    /// Candidate rows with this key.
    count: u32,
    /// The outcome slot of its first row.
    slot: u32,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Pending,
    Added,
    Equal,
    /// Index of the row's changed-column mask.
    Modified(u32),
    /// The key is duplicated on the base side.
    BaseDuplicate,
    /// The key turned out duplicated on the candidate side: no longer counted.
    Retracted,
}

/// A sample row, ordered by its key's row encoding so samples are the same whatever order
/// the batches arrived in.
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
    base: HashTable<BaseEntry>,
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
    batch: RecordBatch,
    keys: Rows,
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
    filter: Option<RowFilter>,
    sample_limit: usize,
    keep_rows: bool,
    pending_base: Vec<RecordBatch>,
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

fn partition_of(hash: u64, parts: usize) -> usize {
    ((hash >> 40) % parts as u64) as usize
}

impl KeyedDiff {
    /// A comparison of batches aligned by `alignment` (keys first). `filter` restricts both
    /// sides to the same keys (sampled and partition strategies).
    pub fn new(
        alignment: &Alignment,
        filter: Option<RowFilter>,
        sample_limit: usize,
        keep_rows: bool,
    ) -> Result<Self, Diagnostic> {
        let nkeys = alignment.key.len();
        let fields = alignment.schema.fields()[..nkeys]
            .iter()
            .map(|f| SortField::new(f.data_type().clone()))
            .collect();
        let converter = RowConverter::new(fields).map_err(|e| {
            Diagnostic::error(
                codes::DIFF_INCOMPATIBLE_TYPES,
                format!("these key columns cannot be compared: {e}"),
            )
            .with_help("diff on key columns of a scalar type")
        })?;
        let threads = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
            .clamp(1, 16);
        let ncols = alignment.compared.len();
        let parts = (0..threads)
            .map(|_| Part {
                base: HashTable::new(),
                added_keys: HashTable::new(),
                outcomes: Vec::new(),
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
            converter,
            filter,
            sample_limit,
            keep_rows,
            pending_base: Vec::new(),
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

    /// One aligned batch of the base side.
    pub fn push_base(&mut self, batch: RecordBatch) -> Result<(), Diagnostic> {
        self.base_rows += batch.num_rows() as u64;
        let batch = self.filtered(batch)?;
        self.compared_base_rows += batch.num_rows() as u64;
        if batch.num_rows() > 0 {
            self.pending_base.push(batch);
        }
        Ok(())
    }

    /// Indexes the base side; call once, after the last `push_base`.
    pub fn finish_base(&mut self) -> Result<(), Diagnostic> {
        let batch = concat_batches(&self.schema, &self.pending_base).map_err(internal)?;
        self.pending_base.clear();
        if batch.num_rows() > u32::MAX as usize {
            return Err(Diagnostic::error(
                codes::DIFF_INVALID_OPTION,
                "the base side has more than 4,294,967,295 rows: too many for one full comparison",
            )
            .with_help("use --strategy partition, sampled or aggregate"));
        }
        let key_columns = &batch.columns()[..self.nkeys];
        let keys = self
            .converter
            .convert_columns(key_columns)
            .map_err(internal)?;
        let hashes = hash_columns(key_columns, batch.num_rows())?;
        let nparts = self.parts.len();
        let build = |pi: usize, part: &mut Part| {
            let mut table = HashTable::with_capacity(hashes.len() / nparts + 1);
            for (r, &h) in hashes.iter().enumerate() {
                if partition_of(h, nparts) != pi {
                    continue;
                }
                let row = keys.row(r);
                match table.find_mut(h, |e: &BaseEntry| {
                    e.hash == h && keys.row(e.row as usize) == row
                }) {
                    Some(e) => e.count += 1,
                    None => {
                        table.insert_unique(
                            h,
                            BaseEntry {
                                hash: h,
                                row: r as u32,
                                count: 1,
                                matched: 0,
                                slot: 0,
                            },
                            |e| e.hash,
                        );
                    }
                }
            }
            part.base = table;
        };
        if nparts == 1 || hashes.len() < PARALLEL_MIN_ROWS {
            for (pi, part) in self.parts.iter_mut().enumerate() {
                build(pi, part);
            }
        } else {
            std::thread::scope(|s| {
                for (pi, part) in self.parts.iter_mut().enumerate() {
                    let build = &build;
                    s.spawn(move || build(pi, part));
                }
            });
        }
        self.base = Some(BaseSide { batch, keys });
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
        let key_columns = &batch.columns()[..self.nkeys];
        let hashes = hash_columns(key_columns, n)?;
        let rows = self
            .converter
            .convert_columns(key_columns)
            .map_err(internal)?;
        let probe = Probe {
            batch: &batch,
            hashes: &hashes,
            keys: &rows,
            base: self
                .base
                .as_ref()
                .expect("finish_base before push_candidate"),
            nkeys: self.nkeys,
            names: &self.names,
            tolerances: &self.tolerances,
            keep_rows: self.keep_rows,
            nparts: self.parts.len(),
        };
        if self.parts.len() == 1 || n < PARALLEL_MIN_ROWS {
            for (pi, part) in self.parts.iter_mut().enumerate() {
                part.probe(&probe, pi);
            }
        } else {
            std::thread::scope(|s| {
                for (pi, part) in self.parts.iter_mut().enumerate() {
                    let probe = &probe;
                    s.spawn(move || part.probe(probe, pi));
                }
            });
        }
        match self.parts.iter_mut().find_map(|p| p.error.take()) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Counts removed rows and duplicates, and assembles the outcome.
    pub fn finish(self) -> Result<KeyedOutcome, Diagnostic> {
        let base = self.base.expect("finish_base before finish");
        let key_of = |array_row: usize| -> Value {
            values::object(
                self.names[..self.nkeys]
                    .iter()
                    .map(String::as_str)
                    .zip(&base.batch.columns()[..self.nkeys]),
                array_row,
            )
        };
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
                let key = base.keys.row(e.row as usize);
                if e.matched > 1 {
                    duplicates.candidate.keys += 1;
                    duplicates.candidate.rows += e.matched as u64;
                }
                if e.count > 1 {
                    duplicates.base.keys += 1;
                    duplicates.base.rows += e.count as u64;
                }
                if e.count > 1 || e.matched > 1 {
                    dup_samples.offer(key.as_ref(), None, || {
                        json!({"key": key_of(e.row as usize), "base_rows": e.count, "candidate_rows": e.matched})
                    });
                } else if e.matched == 0 {
                    records.removed += 1;
                    removed_samples.offer(key.as_ref(), None, || {
                        json!({"key": key_of(e.row as usize), "values": values::object(
                            self.names[self.nkeys..].iter().map(String::as_str).zip(&base.batch.columns()[self.nkeys..]),
                            e.row as usize)})
                    });
                    if self.keep_rows {
                        removed_rows.push(e.row);
                    }
                }
            }
            // Keys the base lacks, repeated by the candidate.
            for c in part.added_keys.iter().filter(|c| c.count > 1) {
                let key = c.key.row();
                duplicates.candidate.keys += 1;
                duplicates.candidate.rows += c.count as u64;
                dup_samples.offer(key.as_ref(), None, || {
                    let key_value = self
                        .converter
                        .convert_rows([key])
                        .map(|arrays| {
                            values::object(
                                self.names[..self.nkeys]
                                    .iter()
                                    .map(String::as_str)
                                    .zip(&arrays),
                                0,
                            )
                        })
                        .unwrap_or(Value::Null);
                    json!({"key": key_value, "base_rows": 0, "candidate_rows": c.count})
                });
            }
        }
        duplicates.samples = dup_samples.sorted();
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
                    .is_none_or(|slot| outcomes[slot as usize] != Outcome::Retracted)
            };
            added.extend(added_samples.heap.into_vec().into_iter().filter(is_live));
            modified.extend(modified_samples.heap.into_vec().into_iter().filter(is_live));
            for k in part_kept {
                let batch = match &k.slots {
                    Some(slots) => {
                        let mask: BooleanArray = slots
                            .iter()
                            .map(|s| Some(outcomes[*s as usize] != Outcome::Retracted))
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
            let removed = take_record_batch(&base.batch, &UInt32Array::from(removed_rows))
                .map_err(internal)?;
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

/// What every partition's thread reads while probing one candidate batch.
struct Probe<'a> {
    batch: &'a RecordBatch,
    hashes: &'a [u64],
    /// The batch's keys in the row format.
    keys: &'a Rows,
    base: &'a BaseSide,
    nkeys: usize,
    names: &'a [String],
    tolerances: &'a [Option<f64>],
    keep_rows: bool,
    nparts: usize,
}

impl Part {
    fn retract(&mut self, slot: u32, words: usize) {
        match self.outcomes[slot as usize] {
            Outcome::Added => self.added -= 1,
            Outcome::Equal => self.equal -= 1,
            Outcome::Modified(at) => {
                self.modified -= 1;
                let mask = &self.masks[at as usize * words..(at as usize + 1) * words];
                for (c, n) in self.changed.iter_mut().enumerate() {
                    if mask[c / 64] & (1 << (c % 64)) != 0 {
                        *n -= 1;
                    }
                }
            }
            Outcome::Pending | Outcome::BaseDuplicate | Outcome::Retracted => {}
        }
        self.outcomes[slot as usize] = Outcome::Retracted;
    }

    fn probe(&mut self, p: &Probe<'_>, pi: usize) {
        if let Err(e) = self.probe_inner(p, pi) {
            self.error = Some(e);
        }
    }

    fn probe_inner(&mut self, p: &Probe<'_>, pi: usize) -> Result<(), Diagnostic> {
        let ncols = self.changed.len();
        let words = ncols.div_ceil(64).max(1);
        let mut pair_cand: Vec<u32> = Vec::new();
        let mut pair_base: Vec<u32> = Vec::new();
        let mut pair_slot: Vec<u32> = Vec::new();
        let mut added_rows: Vec<u32> = Vec::new();
        let mut added_slots: Vec<u32> = Vec::new();
        let base_keys = &p.base.keys;
        for (r, &h) in p.hashes.iter().enumerate() {
            if partition_of(h, p.nparts) != pi {
                continue;
            }
            let row = p.keys.row(r);
            let slot = self.outcomes.len() as u32;
            if let Some(b) = self
                .base
                .find_mut(h, |e| e.hash == h && base_keys.row(e.row as usize) == row)
            {
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
                    self.outcomes.push(Outcome::BaseDuplicate);
                } else {
                    self.outcomes.push(Outcome::Pending);
                    pair_cand.push(r as u32);
                    pair_base.push(b.row);
                    pair_slot.push(slot);
                }
                continue;
            }
            match self
                .added_keys
                .entry(h, |e| e.hash == h && e.key.row() == row, |e| e.hash)
            {
                hashbrown::hash_table::Entry::Occupied(mut o) => {
                    let e = o.get_mut();
                    e.count += 1;
                    if e.count == 2 {
                        let first = e.slot;
                        self.retract(first, words);
                    }
                    continue;
                }
                hashbrown::hash_table::Entry::Vacant(v) => {
                    v.insert(AddedEntry {
                        hash: h,
                        key: row.owned(),
                        count: 1,
                        slot,
                    });
                }
            }
            self.outcomes.push(Outcome::Added);
            self.added += 1;
            added_rows.push(r as u32);
            added_slots.push(slot);
            self.added_samples.offer(row.as_ref(), Some(slot), || {
                json!({
                    "key": values::object(p.names[..p.nkeys].iter().map(String::as_str).zip(&p.batch.columns()[..p.nkeys]), r),
                    "values": values::object(p.names[p.nkeys..].iter().map(String::as_str).zip(&p.batch.columns()[p.nkeys..]), r),
                })
            });
        }
        if p.keep_rows && !added_rows.is_empty() {
            let batch =
                take_record_batch(p.batch, &UInt32Array::from(added_rows)).map_err(internal)?;
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
        self.compare(p, pair_cand, pair_base, pair_slot, words)
    }

    /// Compares matched pairs column by column, then records each pair's outcome.
    fn compare(
        &mut self,
        p: &Probe<'_>,
        pair_cand: Vec<u32>,
        pair_base: Vec<u32>,
        pair_slot: Vec<u32>,
        words: usize,
    ) -> Result<(), Diagnostic> {
        let cand_idx = UInt32Array::from(pair_cand);
        let base_idx = UInt32Array::from(pair_base);
        let cand = take_record_batch(p.batch, &cand_idx).map_err(internal)?;
        let base = take_record_batch(&p.base.batch, &base_idx).map_err(internal)?;
        let mut masks = Vec::with_capacity(self.changed.len());
        for (c, tolerance) in p.tolerances.iter().enumerate() {
            let col = p.nkeys + c;
            masks.push(changed(base.column(col), cand.column(col), *tolerance).map_err(internal)?);
        }
        let any = match masks.split_first() {
            None => BooleanArray::from(vec![false; cand.num_rows()]),
            Some((first, rest)) => rest
                .iter()
                .try_fold(first.clone(), |acc, m| or(&acc, m))
                .map_err(internal)?,
        };
        let mut kept_rows: Vec<u32> = Vec::new();
        let mut kept_slots: Vec<u32> = Vec::new();
        for (i, &slot) in pair_slot.iter().enumerate() {
            if self.outcomes[slot as usize] != Outcome::Pending {
                continue; // retracted: the key repeats later in this batch
            }
            if !any.value(i) {
                self.outcomes[slot as usize] = Outcome::Equal;
                self.equal += 1;
                continue;
            }
            let at = (self.masks.len() / words) as u32;
            let mut mask = vec![0u64; words];
            for (c, m) in masks.iter().enumerate() {
                if m.value(i) {
                    mask[c / 64] |= 1 << (c % 64);
                    self.changed[c] += 1;
                }
            }
            self.masks.extend_from_slice(&mask);
            self.outcomes[slot as usize] = Outcome::Modified(at);
            self.modified += 1;
            let key = p.base.keys.row(base_idx.value(i) as usize);
            self.modified_samples.offer(key.as_ref(), Some(slot), || {
                let mut changes = serde_json::Map::new();
                for (c, m) in masks.iter().enumerate() {
                    if m.value(i) {
                        let col = p.nkeys + c;
                        changes.insert(
                            p.names[col].clone(),
                            json!({"base": values::value(base.column(col), i), "candidate": values::value(cand.column(col), i)}),
                        );
                    }
                }
                json!({
                    "key": values::object(p.names[..p.nkeys].iter().map(String::as_str).zip(&cand.columns()[..p.nkeys]), i),
                    "changes": changes,
                })
            });
            if p.keep_rows {
                kept_rows.push(i as u32);
                kept_slots.push(slot);
            }
        }
        if !kept_rows.is_empty() {
            let idx = UInt32Array::from(kept_rows);
            for (side, batch) in [("base", &base), ("candidate", &cand)] {
                self.kept.push(Kept {
                    kind: "modified",
                    side,
                    batch: take_record_batch(batch, &idx).map_err(internal)?,
                    slots: Some(kept_slots.clone()),
                });
            }
        }
        Ok(())
    }
}
