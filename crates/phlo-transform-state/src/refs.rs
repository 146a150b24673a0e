//! Records of the embedded engine's environments (SPEC §44–48): a reference is a set of
//! pointers, model → physical table at a version, with its provenance. Its `hash` is the
//! content hash of the pointer set, so "the candidate advanced" and "the target moved" are
//! both a hash that changed. Every change of a reference is one [`RefSwap`], applied in one
//! state transaction under compare-and-swap on the hashes it expects.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use crate::MaterializedVersion;

/// Where one model of an environment physically is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pointer {
    pub model_name: String,
    /// `table` (a Delta table) or `view` (a stored view definition).
    pub kind: String,
    /// Relative to the warehouse root: `<model>` (main's own tables) or
    /// `.refs/<ref dir>/<model>`; a view's definition file for views.
    pub location: String,
    /// The Delta version the environment reads (tables only).
    pub delta_version: Option<i64>,
    /// The output identity recorded with the pointer: a digest of the Delta commit at
    /// `delta_version`, so a table deleted and rewritten at the same version never matches.
    pub identity: Option<String>,
    /// The environment whose run wrote it.
    pub built_in: String,
    /// The materialisation record of what is there.
    pub record: MaterializedVersion,
}

/// The reference and hash a candidate was created from, with the base's pointers then (what
/// the `conflicts` gate compares both sides against).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreatedFrom {
    #[serde(rename = "ref")]
    pub reference: String,
    pub hash: String,
    pub pointers: BTreeMap<String, Pointer>,
}

/// The last run of a reference, bound to the reference's hash after its writes landed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunBinding {
    pub run_id: String,
    pub hash: String,
}

/// One environment of the embedded engine.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefRecord {
    pub name: String,
    /// [`pointer_hash`] of `pointers`.
    pub hash: String,
    /// The state environment its runs and materialisations are recorded under.
    pub environment: String,
    /// By model id.
    pub pointers: BTreeMap<String, Pointer>,
    /// `None` for `main`.
    pub created_from: Option<CreatedFrom>,
    pub created_at: String,
    pub updated_at: String,
    pub run: Option<RunBinding>,
}

impl RefRecord {
    /// Replaces the pointers and recomputes the hash.
    pub fn set_pointers(&mut self, pointers: BTreeMap<String, Pointer>, at: &str) {
        self.hash = pointer_hash(&pointers);
        self.pointers = pointers;
        self.updated_at = at.to_string();
    }
}

/// The content hash of a pointer set: 16 hex digits of SHA-256 over every pointer's model,
/// location, Delta version, identity and model version.
pub fn pointer_hash(pointers: &BTreeMap<String, Pointer>) -> String {
    let mut text = String::new();
    for (id, p) in pointers {
        text.push_str(&format!(
            "{id}\t{}\t{}\t{}\t{}\n",
            p.location,
            p.delta_version.map(|v| v.to_string()).unwrap_or_default(),
            p.identity.as_deref().unwrap_or_default(),
            p.record.version
        ));
    }
    phlo_transform_core::hash::sha256_hex(text)[..16].to_string()
}

/// A promotion or rollback, recorded once (the PromotionRecord of SPEC §47).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefEvent {
    pub event_id: String,
    /// `promotion` or `rollback`.
    pub kind: String,
    /// The reference it changed.
    #[serde(rename = "ref")]
    pub reference: String,
    pub at: String,
    pub body: serde_json::Value,
}

/// An evidence record (SPEC §45, §52): what a command established about a reference at one
/// hash, written once and never changed; deleted with its reference.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EvidenceRecord {
    pub evidence_id: String,
    /// `environment` or `branch_diff`.
    pub kind: String,
    /// The reference it is about (a branch diff: its candidate side).
    #[serde(rename = "ref")]
    pub reference: String,
    /// That reference's hash when it was established.
    pub hash: String,
    pub at: String,
    pub body: serde_json::Value,
}

/// One reference written by a [`RefSwap`].
#[derive(Clone, Debug)]
pub struct RefWrite {
    pub name: String,
    /// The hash the reference must still have; `None`: it must not exist yet.
    pub expected: Option<String>,
    /// The new record; `None` deletes the reference, and its evidence with it.
    pub record: Option<RefRecord>,
}

/// Replaces an environment's materialisation records (a pointer swap moves them with the
/// pointers), regardless of generation order: a rollback restores older records on purpose.
#[derive(Clone, Debug)]
pub struct VersionSwap {
    pub environment: String,
    pub put: Vec<MaterializedVersion>,
    /// Model ids whose record goes.
    pub remove: Vec<String>,
}

/// Everything one change of references writes, in one transaction; nothing is written when
/// any expected hash no longer holds.
#[derive(Clone, Debug, Default)]
pub struct RefSwap {
    pub writes: Vec<RefWrite>,
    /// References that must still be at these hashes without being written.
    pub unchanged: Vec<(String, String)>,
    pub versions: Vec<VersionSwap>,
    pub event: Option<RefEvent>,
}
