//! Virtual environments of the embedded engine (SPEC §44–48, issue 16): a reference is a set
//! of pointers, model → physical Delta table at a version, recorded in the state store.
//! `main` is the published environment (state environment `local`); a candidate created
//! `--from` a base starts with the base's pointers, writes only into its own root
//! (`.phlo/warehouse/.refs/<name>_<8 hex>/`) and keeps reading the base's tables for the rest,
//! adopted with an identity proof (SPEC §39). Publishing swaps pointers in one state
//! transaction ([`promote`]); [`rollback`] swaps them back or time-travels one table.
//!
//! `main` needs no record until an environment is created from it: without one it is what
//! it always was — its own tables at their latest versions. The first `ref create` pins it
//! (records its pointers), and from then on every run of `main` moves its pointers forward.

mod backend;
pub(crate) mod binding;
pub mod branch_diff;
mod branch_sides;
pub mod branches;
pub mod data_diff_gate;
pub mod evidence;
pub mod gate;
pub mod lineage_gate;
pub mod promote;
pub mod report;
pub mod rollback;

pub use binding::{bind_target, Binding};
pub use branches::for_target;

use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;
use phlo_transform_state::{
    CreatedFrom, MaterializedVersion, Pointer, RefRecord, RefSwap, RefWrite, StateStore,
    VersionSwap,
};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The published environment's reference.
pub const MAIN: &str = "main";
/// The state environment `main` records its runs and materialisations under.
pub const MAIN_ENVIRONMENT: &str = "local";
/// The folder of the warehouse root that holds the candidates' own tables.
const REFS_DIR: &str = ".refs";

/// The references of one workspace: its state store and its warehouse root.
pub struct Environments {
    pub(crate) store: Arc<dyn StateStore>,
    pub(crate) warehouse: PathBuf,
    /// On Trino + Nessie: the branches references are ([`branches`]).
    pub(crate) branches: Option<Arc<dyn phlo_transform_adapter::branching::BranchCatalog>>,
    /// Where evidence is exported (`.phlo/transform/`); `None`: recorded in the state only.
    pub(crate) artifacts: Option<PathBuf>,
}

/// The record of candidate `name` as created from `base`: the base's pointers and hash, and
/// the base as its provenance (what the `base` and `conflicts` gates audit).
pub(crate) fn candidate_record(name: &str, base: &RefRecord) -> RefRecord {
    let at = now();
    RefRecord {
        name: name.to_string(),
        hash: base.hash.clone(),
        environment: environment_of(name),
        pointers: base.pointers.clone(),
        created_from: Some(CreatedFrom {
            reference: base.name.clone(),
            hash: base.hash.clone(),
            pointers: base.pointers.clone(),
        }),
        created_at: at.clone(),
        updated_at: at,
        run: None,
    }
}

pub(crate) fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

pub(crate) fn state_error(e: phlo_transform_state::StateError) -> Diagnostic {
    Diagnostic::error(codes::STATE_UNAVAILABLE, e.message)
        .with_help("check that the state database is reachable and writable")
}

/// Checks a reference name: letters, digits, `-`, `_`, `.`, `/`; no empty, `.`-leading or
/// `..` segment; at most 100 characters; never `local` (main's state environment).
pub fn check_ref_name(name: &str) -> Result<(), Diagnostic> {
    let bad = |why: &str| {
        Err(Diagnostic::error(
            codes::INVALID_REF_NAME,
            format!("invalid reference name `{name}`: {why}"),
        )
        .with_help(
            "use letters, digits, `-`, `_`, `.` and `/` (`feature/new-assay`), at most 100 characters",
        ))
    };
    if name.is_empty() || name.len() > 100 {
        return bad("it must have 1 to 100 characters");
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/')))
    {
        return bad(&format!("`{c}` is not allowed"));
    }
    if name.split('/').any(|s| s.is_empty() || s.starts_with('.')) {
        return bad("no segment may be empty or start with `.`");
    }
    if name == MAIN_ENVIRONMENT {
        return bad("`local` is the state environment of `main`");
    }
    Ok(())
}

/// The state environment of reference `name`.
pub fn environment_of(name: &str) -> String {
    if name == MAIN {
        MAIN_ENVIRONMENT.to_string()
    } else {
        name.to_string()
    }
}

/// Reference `name` as a file name: `<sanitised name>_<8 hex of its SHA-256>`, so
/// punctuation-equivalent names such as `ci/pr-1` and `ci_pr_1` never share one.
pub fn slug(name: &str) -> String {
    let sanitised: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let hash = &phlo_transform_core::hash::sha256_hex(name)[..8];
    format!("{sanitised}_{hash}")
}

/// The own root of reference `name`, relative to the warehouse root: empty for `main`,
/// `.refs/<slug>` for a candidate ([`slug`]).
pub fn own_dir(name: &str) -> PathBuf {
    if name == MAIN {
        return PathBuf::new();
    }
    Path::new(REFS_DIR).join(slug(name))
}

fn location(dir: &Path, relation: &str, view: bool) -> String {
    let file = if view {
        format!("{relation}.view.json")
    } else {
        relation.to_string()
    };
    dir.join(file).to_string_lossy().into_owned()
}

impl Environments {
    pub fn new(store: Arc<dyn StateStore>, warehouse: &Path) -> Self {
        Environments {
            store,
            warehouse: warehouse.to_path_buf(),
            branches: None,
            artifacts: None,
        }
    }

    /// Evidence is exported into `dir` too (the artifact directory).
    pub fn with_artifacts(mut self, dir: &Path) -> Self {
        self.artifacts = Some(dir.to_path_buf());
        self
    }

    /// Every recorded reference; `main` is listed even before it is pinned.
    pub async fn list(&self) -> Result<Vec<RefRecord>, Diagnostic> {
        if self.branches.is_some() {
            return self.branch_list().await;
        }
        let mut refs = self.store.refs().await.map_err(state_error)?;
        if !refs.iter().any(|r| r.name == MAIN) {
            refs.insert(0, self.unpinned_main().await?);
        }
        Ok(refs)
    }

    /// The reference `name` (Y007 when there is none).
    pub async fn get(&self, name: &str) -> Result<RefRecord, Diagnostic> {
        if self.branches.is_some() {
            return Ok(self.live(name).await?.record);
        }
        self.find(name).await?.ok_or_else(|| unknown_ref(name))
    }

    /// The recorded reference `name`; `main` unpinned is resolved from its own tables.
    pub(crate) async fn find(&self, name: &str) -> Result<Option<RefRecord>, Diagnostic> {
        let recorded = self.store.refs().await.map_err(state_error)?;
        if let Some(r) = recorded.into_iter().find(|r| r.name == name) {
            return Ok(Some(r));
        }
        if name == MAIN {
            return Ok(Some(self.unpinned_main().await?));
        }
        Ok(None)
    }

    /// `main` before any environment was created from it: its recorded materialisations
    /// whose relation exists in the warehouse root, each at its latest version.
    async fn unpinned_main(&self) -> Result<RefRecord, Diagnostic> {
        let records = self
            .store
            .materializations(MAIN_ENVIRONMENT)
            .await
            .map_err(state_error)?;
        let mut pointers = BTreeMap::new();
        for (id, record) in records {
            if let Some(p) = self.own_pointer(MAIN, MAIN_ENVIRONMENT, record) {
                pointers.insert(id, p);
            }
        }
        let at = now();
        let mut main = RefRecord {
            name: MAIN.to_string(),
            hash: String::new(),
            environment: MAIN_ENVIRONMENT.to_string(),
            pointers: BTreeMap::new(),
            created_from: None,
            created_at: at.clone(),
            updated_at: at.clone(),
            run: None,
        };
        main.set_pointers(pointers, &at);
        Ok(main)
    }

    /// The pointer to what reference `name` holds of `record`'s model in its own root now
    /// (the latest version of its table, or its view definition); `None` when nothing is
    /// there.
    pub(crate) fn own_pointer(
        &self,
        name: &str,
        environment: &str,
        record: MaterializedVersion,
    ) -> Option<Pointer> {
        let dir = own_dir(name);
        let view = record.materialization == "view";
        // The folder is named after the relation (`default_schema` places it).
        let location = location(&dir, &record.relation, view);
        let path = self.warehouse.join(&location);
        let (delta_version, identity) = if view {
            if !path.is_file() {
                return None;
            }
            (None, None)
        } else {
            let v = phlo_transform_adapter::pins::latest_version(&path)?;
            (
                Some(v),
                phlo_transform_adapter::pins::commit_identity(&path, v),
            )
        };
        Some(Pointer {
            model_name: record.model_name.clone(),
            kind: if view { "view" } else { "table" }.to_string(),
            location,
            delta_version,
            identity,
            built_in: environment.to_string(),
            record,
        })
    }

    /// `ref create <name> --from <base>`: a candidate holding the base's pointers, with the
    /// base and its hash recorded as `created_from`, and its environment evidence. Pins
    /// `main` first when it is the base and has no record yet.
    pub async fn create(&self, name: &str, from: &str) -> Result<RefRecord, Diagnostic> {
        let created = if self.branches.is_some() {
            self.branch_create(name, from).await?
        } else {
            self.local_create(name, from).await?
        };
        self.record_environment(&created).await?;
        Ok(created)
    }

    async fn local_create(&self, name: &str, from: &str) -> Result<RefRecord, Diagnostic> {
        check_ref_name(name)?;
        if name == MAIN {
            return Err(exists(name));
        }
        for _ in 0..3 {
            let recorded = self.store.refs().await.map_err(state_error)?;
            if recorded.iter().any(|r| r.name == name) {
                return Err(exists(name));
            }
            let (base, base_recorded) = match recorded.into_iter().find(|r| r.name == from) {
                Some(r) => (r, true),
                None if from == MAIN => (self.unpinned_main().await?, false),
                None => return Err(unknown_ref(from)),
            };
            let candidate = candidate_record(name, &base);
            let mut swap = RefSwap::default();
            if base_recorded {
                swap.unchanged.push((base.name.clone(), base.hash.clone()));
            } else {
                swap.writes.push(RefWrite {
                    name: base.name.clone(),
                    expected: None,
                    record: Some(base.clone()),
                });
            }
            swap.writes.push(RefWrite {
                name: name.to_string(),
                expected: None,
                record: Some(candidate.clone()),
            });
            if self.store.swap_refs(&swap).await.map_err(state_error)? {
                return Ok(candidate);
            }
        }
        Err(stale(&format!(
            "`{from}` kept moving while `{name}` was being created from it"
        )))
    }

    /// `ref delete <name>`: the reference, its state environment's records and the tables in
    /// its own root that no other reference or recorded promotion still points at. `main` is
    /// refused (Y009). Its evidence goes with it, exports included.
    pub async fn delete(&self, name: &str) -> Result<RefRecord, Diagnostic> {
        let deleted = if self.branches.is_some() {
            self.branch_delete(name).await?
        } else {
            self.local_delete(name).await?
        };
        self.remove_exports(name);
        Ok(deleted)
    }

    async fn local_delete(&self, name: &str) -> Result<RefRecord, Diagnostic> {
        if name == MAIN {
            return Err(main_protected());
        }
        let record = self.get(name).await?;
        let records = self
            .store
            .materializations(&record.environment)
            .await
            .map_err(state_error)?;
        let swap = RefSwap {
            writes: vec![RefWrite {
                name: name.to_string(),
                expected: Some(record.hash.clone()),
                record: None,
            }],
            versions: vec![VersionSwap {
                environment: record.environment.clone(),
                put: Vec::new(),
                remove: records.into_keys().collect(),
            }],
            ..RefSwap::default()
        };
        if !self.store.swap_refs(&swap).await.map_err(state_error)? {
            return Err(stale(&format!(
                "`{name}` changed while it was being deleted"
            )));
        }
        self.remove_unreferenced(&own_dir(name)).await?;
        Ok(record)
    }

    /// Removes what `dir` (a deleted candidate's own root) holds that no reference and no
    /// recorded promotion or rollback points at.
    async fn remove_unreferenced(&self, dir: &Path) -> Result<(), Diagnostic> {
        let mut referenced = BTreeSet::new();
        for r in self.store.refs().await.map_err(state_error)? {
            referenced.extend(r.pointers.into_values().map(|p| p.location));
        }
        for e in self.store.ref_events().await.map_err(state_error)? {
            collect_locations(&e.body, &mut referenced);
        }
        let root = self.warehouse.join(dir);
        let Ok(entries) = std::fs::read_dir(&root) else {
            return Ok(());
        };
        let mut kept = false;
        for entry in entries.flatten() {
            let rel = dir.join(entry.file_name()).to_string_lossy().into_owned();
            if referenced.contains(&rel) {
                kept = true;
                continue;
            }
            let path = entry.path();
            let _ = if path.is_dir() {
                std::fs::remove_dir_all(&path)
            } else {
                std::fs::remove_file(&path)
            };
        }
        if !kept {
            let _ = std::fs::remove_dir(&root);
        }
        Ok(())
    }

    /// The promotions into and rollbacks of reference `name`, most recent first.
    pub async fn events(
        &self,
        name: &str,
    ) -> Result<Vec<phlo_transform_state::RefEvent>, Diagnostic> {
        let mut events = self.store.ref_events().await.map_err(state_error)?;
        events.retain(|e| e.reference == name);
        Ok(events)
    }
}

/// `default_schema` of the embedded engine (`--adapter local`): where it places models.
pub fn local_default_schema(c: &phlo_transform_compiler::Compilation) -> Option<String> {
    c.workspace
        .adapter_target(Some(phlo_transform_project::AdapterKind::Local.as_str()))
        .ok()
        .and_then(|t| t.settings.default_schema)
}

/// Every `"location"` string in a recorded event body (the pointers it saved).
fn collect_locations(v: &serde_json::Value, out: &mut BTreeSet<String>) {
    match v {
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                match (k.as_str(), v) {
                    ("location", serde_json::Value::String(s)) => {
                        out.insert(s.clone());
                    }
                    _ => collect_locations(v, out),
                }
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| collect_locations(v, out)),
        _ => {}
    }
}

pub(crate) fn unknown_ref(name: &str) -> Diagnostic {
    Diagnostic::error(codes::UNKNOWN_REF, format!("no reference `{name}`"))
        .with_help("`phlo-transform ref list` shows the references")
}

pub(crate) fn main_protected() -> Diagnostic {
    Diagnostic::error(
        codes::MAIN_REF_PROTECTED,
        "refusing to delete `main`: it is the published environment and the default base",
    )
    .with_help("roll it back instead: `phlo-transform rollback --ref main --to <promotion>`")
}

pub(crate) fn exists(name: &str) -> Diagnostic {
    Diagnostic::error(
        codes::REF_EXISTS,
        format!("reference `{name}` already exists"),
    )
    .with_help("pick another name, or delete it first with `phlo-transform ref delete`")
}

pub(crate) fn stale(message: &str) -> Diagnostic {
    Diagnostic::error(codes::STALE_REF, message.to_string())
        .with_help("evaluate again: another promotion, rollback or run changed it first")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_names_are_never_paths() {
        for good in ["dev", "feature/new-assay", "ci/pr-184", "release/2026.09"] {
            assert!(check_ref_name(good).is_ok(), "{good}");
        }
        for bad in [
            "", "../x", "a//b", "/abs", ".hidden", "a/.b", "a b", "local", "x;y",
        ] {
            assert_eq!(
                check_ref_name(bad).unwrap_err().code,
                codes::INVALID_REF_NAME,
                "{bad}"
            );
        }
    }

    #[test]
    fn punctuation_equivalent_names_get_distinct_folders() {
        assert_ne!(own_dir("ci/pr-1"), own_dir("ci_pr_1"));
        assert!(own_dir("ci/pr-1").starts_with(REFS_DIR));
        assert_eq!(own_dir(MAIN), PathBuf::new());
    }
}
