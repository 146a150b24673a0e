//! The base side's key index: an open-addressing hash table with linear probing, whose
//! slots are `BaseEntry`s.
//!
//! Why not `hashbrown` (as before): at millions of keys the index is far larger than the
//! caches, so nearly every insert and probe waits on a cache and TLB miss, one at a time;
//! profiled on 10M rows, that wait was the largest cost of the diff. Here the first slot of
//! a key is a function of its hash alone, so the callers prefetch the slot of a row some rows
//! ahead (`prefetch`) and many misses are in flight at once. `hashbrown` does not expose
//! where a hash lands.

use std::alloc::{alloc_zeroed, handle_alloc_error, Layout};

/// One distinct base key. An all-zero entry (`count == 0`) is an empty slot.
#[derive(Clone, Copy)]
pub struct BaseEntry {
    /// The packed key, or (row-format keys) the key hash.
    pub key: u128,
    /// The row id (`chunks`) of its first row.
    pub row: u32,
    /// Base rows with this key.
    pub count: u32,
    /// Candidate rows with this key.
    pub matched: u32,
    /// The outcome slot of the first candidate row with this key.
    pub slot: u32,
}

impl BaseEntry {
    fn is_empty(&self) -> bool {
        self.count == 0
    }
}

/// Grows beyond this load (numerator, denominator): linear probing stays short below it.
const MAX_LOAD: (usize, usize) = (7, 10);

pub struct KeyIndex {
    slots: Vec<BaseEntry>,
    /// `slots.len() - 1` (a power of two minus one).
    mask: usize,
    len: usize,
}

/// `n` empty slots. Allocated zeroed rather than written: fresh pages come zeroed from the
/// kernel as they are first touched, so the index costs no pass of its own.
fn empty_slots(n: usize) -> Vec<BaseEntry> {
    let layout = Layout::array::<BaseEntry>(n).expect("the index fits in memory");
    // SAFETY: `layout` has a non-zero size (n >= 1); a zeroed `BaseEntry` (integers only) is
    // a valid value, and the allocation holds exactly `n` of them with the layout `Vec` uses.
    unsafe {
        let ptr = alloc_zeroed(layout).cast::<BaseEntry>();
        if ptr.is_null() {
            handle_alloc_error(layout);
        }
        Vec::from_raw_parts(ptr, n, n)
    }
}

/// Slots for `keys` keys within the maximum load.
fn slots_for(keys: usize) -> usize {
    (keys * MAX_LOAD.1 / MAX_LOAD.0 + 1)
        .next_power_of_two()
        .max(16)
}

impl KeyIndex {
    /// An index with room for `keys` keys before it grows.
    pub fn with_capacity(keys: usize) -> Self {
        let n = slots_for(keys);
        KeyIndex {
            slots: empty_slots(n),
            mask: n - 1,
            len: 0,
        }
    }

    /// Distinct keys indexed.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Starts loading the first slot of `hash` into the cache.
    #[inline]
    pub fn prefetch(&self, hash: u64) {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            let slot: *const BaseEntry = &self.slots[hash as usize & self.mask];
            // SAFETY: a prefetch is a hint that never faults, and `slot` is in bounds.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(slot.cast()) };
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = hash;
    }

    /// The position of the entry with `key` (and, when keys are hashes, whose first row
    /// `same` accepts), or of the empty slot where it would go.
    #[inline]
    fn position(&self, hash: u64, key: u128, same: impl Fn(u32) -> bool) -> usize {
        let mut at = hash as usize & self.mask;
        loop {
            let e = &self.slots[at];
            if e.is_empty() || (e.key == key && same(e.row)) {
                return at;
            }
            at = (at + 1) & self.mask;
        }
    }

    /// The entry of `key` (see `position`), if indexed.
    #[inline]
    pub fn find_mut(
        &mut self,
        hash: u64,
        key: u128,
        same: impl Fn(u32) -> bool,
    ) -> Option<&mut BaseEntry> {
        let at = self.position(hash, key, same);
        let e = &mut self.slots[at];
        (!e.is_empty()).then_some(e)
    }

    /// Counts one more base row of `key`, or indexes the key with its first row `row`.
    /// `rehash` gives the hash of an entry key, to move entries when the index grows.
    #[inline]
    pub fn add(
        &mut self,
        hash: u64,
        key: u128,
        row: u32,
        same: impl Fn(u32) -> bool,
        rehash: impl Fn(u128) -> u64,
    ) {
        if (self.len + 1) * MAX_LOAD.1 > self.slots.len() * MAX_LOAD.0 {
            self.grow(rehash);
        }
        let at = self.position(hash, key, same);
        let e = &mut self.slots[at];
        if e.is_empty() {
            *e = BaseEntry {
                key,
                row,
                count: 1,
                matched: 0,
                slot: 0,
            };
            self.len += 1;
        } else {
            e.count += 1;
        }
    }

    /// Doubles the slots and moves every entry to its place in them.
    fn grow(&mut self, rehash: impl Fn(u128) -> u64) {
        let grown = empty_slots(self.slots.len() * 2);
        let old = std::mem::replace(&mut self.slots, grown);
        self.mask = self.slots.len() - 1;
        for e in old.into_iter().filter(|e| !e.is_empty()) {
            // Distinct keys: the first empty slot from its hash is the entry's place.
            let at = self.position(rehash(e.key), e.key, |_| false);
            self.slots[at] = e;
        }
    }

    /// Every entry, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = &BaseEntry> {
        self.slots.iter().filter(|e| !e.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hash that sends every key to one of four first slots: long probe runs, wrapping at
    /// the end of the slots.
    fn crowded(key: u128) -> u64 {
        u64::MAX - 3 + (key as u64 % 4)
    }

    /// Keys are found (and counted) through collisions, wrapping and growth; absent keys are
    /// not found.
    #[test]
    fn finds_counts_and_grows() {
        let mut index = KeyIndex::with_capacity(2);
        for round in 0..3u32 {
            for k in 0..100u128 {
                index.add(crowded(k), k, k as u32 + 1000 * round, |_| true, crowded);
            }
        }
        assert_eq!(index.len(), 100);
        assert!(index.slots.len() >= 100 * MAX_LOAD.1 / MAX_LOAD.0);
        for k in 0..100u128 {
            let e = index.find_mut(crowded(k), k, |_| true).expect("indexed");
            assert_eq!((e.key, e.row, e.count), (k, k as u32, 3));
        }
        assert!(index.find_mut(crowded(100), 100, |_| true).is_none());
        let mut rows: Vec<u32> = index.iter().map(|e| e.row).collect();
        rows.sort_unstable();
        assert_eq!(rows, (0..100).collect::<Vec<_>>());
    }

    /// When entry keys are hashes, `same` tells apart keys of the same hash.
    #[test]
    fn same_tells_apart_equal_hashes() {
        let mut index = KeyIndex::with_capacity(4);
        let rehash = |k: u128| k as u64;
        index.add(7, 7, 1, |_| false, rehash);
        index.add(7, 7, 2, |row| row == 2, rehash);
        index.add(7, 7, 3, |row| row == 1, rehash);
        assert_eq!(index.len(), 2);
        assert_eq!(index.find_mut(7, 7, |row| row == 1).unwrap().count, 2);
        assert_eq!(index.find_mut(7, 7, |row| row == 2).unwrap().count, 1);
        assert!(index.find_mut(7, 7, |row| row == 3).is_none());
    }
}
