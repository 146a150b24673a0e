//! The bytes of a pack, and a stage's packs as one compile read them from every store.
//!
//! A pack is [`HEADER`] then records `<64 hex key> <body length> <crc32 of key and body>\n
//! <body>\n`. A pack is read up to its first damaged record, and a record whose checksum does
//! not match is skipped: a pack truncated by a crash, damaged on a shared disk or written by
//! someone else's tool is a miss, never a wrong entry.

use phlo_transform_core::pack_store::PackStore;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// The first line of every pack; a file without it (another format, a partial write) holds
/// nothing. Bump when what a stage stores changes shape.
pub(super) const HEADER: &str = "phlo-compile-cache 3\n";

/// A store a compile reads and writes, and whether its failures are worth a warning (a shared
/// store someone configured) or silent (the workspace's own directory: a failure there only
/// costs the next compile the work).
#[derive(Clone, Debug)]
pub(super) struct Tier {
    pub store: Arc<dyn PackStore>,
    pub shared: bool,
}

/// Where an entry's body is: tier, pack, body start, body length.
type Place = (usize, usize, usize, usize);

/// A stage's packs in every tier as one compile read them.
#[derive(Default)]
pub(super) struct Packs {
    /// Per tier: its packs' ids and bytes.
    tiers: Vec<Vec<(String, Vec<u8>)>>,
    /// Entry key → where its body is; the first tier holding a key wins.
    index: HashMap<String, Place>,
    /// Per tier: the keys it holds.
    held: Vec<HashSet<String>>,
}

impl Packs {
    /// Reads `stage`'s packs of `build` from every tier; a tier that cannot be read holds
    /// nothing, and its error is in `errors` when it is a shared one.
    pub fn read(tiers: &[Tier], build: &str, stage: &str, errors: &mut Vec<String>) -> Packs {
        let mut packs = Packs::default();
        for (t, tier) in tiers.iter().enumerate() {
            let read = tier.store.packs(build, stage).unwrap_or_else(|e| {
                if tier.shared {
                    errors.push(e);
                }
                Vec::new()
            });
            let mut held = HashSet::new();
            let mut own = Vec::with_capacity(read.len());
            for (p, pack) in read.into_iter().enumerate() {
                for (key, start, len) in records(&pack.bytes) {
                    packs.index.entry(key.clone()).or_insert((t, p, start, len));
                    held.insert(key);
                }
                own.push((pack.id, pack.bytes));
            }
            packs.tiers.push(own);
            packs.held.push(held);
        }
        packs
    }

    pub fn body(&self, key: &str) -> Option<&[u8]> {
        let &(t, p, start, len) = self.index.get(key)?;
        Some(&self.tiers[t][p].1[start..start + len])
    }

    /// Whether tier `t` holds `key`.
    pub fn holds(&self, t: usize, key: &str) -> bool {
        self.held.get(t).is_some_and(|h| h.contains(key))
    }

    /// How many packs tier `t` held.
    pub fn count(&self, t: usize) -> usize {
        self.tiers.get(t).map_or(0, Vec::len)
    }

    /// The ids of tier `t`'s packs.
    pub fn ids(&self, t: usize) -> Vec<String> {
        self.tiers
            .get(t)
            .map(|packs| packs.iter().map(|(id, _)| id.clone()).collect())
            .unwrap_or_default()
    }
}

/// A pack's records, `(key, body start, body length)`, up to the first damaged one; a record
/// whose checksum does not match is left out.
pub(super) fn records(bytes: &[u8]) -> Vec<(String, usize, usize)> {
    let mut out = Vec::new();
    let Some(mut rest) = bytes.strip_prefix(HEADER.as_bytes()) else {
        return out;
    };
    let mut at = HEADER.len();
    while !rest.is_empty() {
        let Some(eol) = rest.iter().position(|&b| b == b'\n') else {
            break;
        };
        let Some((key, len, crc)) = std::str::from_utf8(&rest[..eol]).ok().and_then(|line| {
            let mut parts = line.split(' ');
            let key = parts.next()?;
            let len = parts.next()?.parse::<usize>().ok()?;
            let crc = u32::from_str_radix(parts.next()?, 16).ok()?;
            parts.next().is_none().then_some((key, len, crc))
        }) else {
            break;
        };
        let start = eol + 1;
        let valid_key = key.len() == 64 && key.bytes().all(|b| b.is_ascii_hexdigit());
        if !valid_key || rest.len() < start + len + 1 || rest[start + len] != b'\n' {
            break;
        }
        if checksum(key, &rest[start..start + len]) == crc {
            out.push((key.to_string(), at + start, len));
        }
        rest = &rest[start + len + 1..];
        at += start + len + 1;
    }
    out
}

/// Appends one record to a pack being written.
pub(super) fn record(out: &mut Vec<u8>, key: &str, body: &[u8]) {
    let crc = checksum(key, body);
    out.extend_from_slice(format!("{key} {} {crc:08x}\n", body.len()).as_bytes());
    out.extend_from_slice(body);
    out.push(b'\n');
}

/// The checksum binds a body to its key: a body moved under another key fails it too.
fn checksum(key: &str, body: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(key.as_bytes());
    h.update(body);
    h.finalize()
}
