//! Where a compile cache keeps its packs (issue 42): a workspace's own directory, a directory
//! shared by a team, or the PostgreSQL state store. The compiler reads and writes packs through
//! this trait without knowing which; each store lives in the crate that owns its backend (the
//! directory one in the compiler, PostgreSQL's in the state crate).
//!
//! A store holds opaque bytes under `(build, stage, id)`. What a pack means, and whether its
//! records can be trusted, is the compile cache's business: a store may lose, truncate or
//! corrupt a pack and the cache must still never give a wrong answer.

/// One pack as a store holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pack {
    /// The store's name for it, unique within `(build, stage)`.
    pub id: String,
    pub bytes: Vec<u8>,
}

/// A store of compile-cache packs, partitioned by the compiler build that wrote them and the
/// stage (`parse`, `type`).
pub trait PackStore: Send + Sync + std::fmt::Debug {
    /// Every pack of `stage` written by `build`, oldest first.
    fn packs(&self, build: &str, stage: &str) -> Result<Vec<Pack>, String>;
    /// Adds a pack, whole or not at all, under an id no other writer uses.
    fn add(&self, build: &str, stage: &str, bytes: &[u8]) -> Result<(), String>;
    /// Removes the packs `ids` (after a compaction wrote what they held that is still used).
    fn remove(&self, build: &str, stage: &str, ids: &[String]) -> Result<(), String>;
    /// Removes what other builds wrote that no compile of this build can read. A store shared
    /// by several builds at once (a team on two versions) keeps their recent packs.
    fn prune(&self, build: &str) -> Result<(), String>;
    /// Where the store is, for messages (no secrets).
    fn describe(&self) -> String;
}
