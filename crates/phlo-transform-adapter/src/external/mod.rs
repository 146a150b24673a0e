//! Relations that live only in the warehouse (SPEC §12 step 6, §14) on PostgreSQL and DuckDB:
//! a relation a model or data test reads that is neither a model nor a declared source, but
//! exists in the target, becomes a source typed from the warehouse's catalog. The compiler
//! names the relations nothing resolves once it has parsed the workspace
//! ([`phlo_transform_compiler::MissingRelations`]: the models are parsed once); those are
//! looked up in the catalog (columns and types only; no query over the data) and become
//! sources with declared columns.
//!
//! What the catalog said is cached per warehouse (the target's type and address, never its
//! name) in `.phlo/warehouse-schemas.json`
//! ([`cache`]), so that `check` types these relations without a connection (fast, and
//! offline): it reads the warehouse only for relations the cache lacks or read more than
//! [`cache::MAX_AGE`] ago. `plan` and `run` always read the catalog again and refresh the
//! cache. A warehouse that cannot be read leaves the cached columns in use, with a warning
//! (A013) naming how old they are; a relation neither the warehouse nor the cache knows stays
//! unresolved (R001).

pub mod cache;
mod catalog;

use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;
use phlo_transform_project::{AdapterTarget, SourceDecl, Workspace};
use std::collections::BTreeSet;
use std::path::Path;

use cache::{CachedRelation, SchemaCache};

/// How compiling treats the schema cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SchemaRead {
    /// `check`, `list`, `inspect`, …: the cache first; the warehouse only for what it lacks
    /// or holds for longer than [`cache::MAX_AGE`].
    Cached,
    /// `plan`, `run`: the warehouse, refreshing the cache.
    Refresh,
}

/// The sources for those of `missing` (the parts of relations nothing in `ws` resolves) that
/// only the warehouse of `target` has (PostgreSQL, DuckDB: relations of one or two parts;
/// their drivers call this), typed from its catalog or the schema cache under `root/.phlo`;
/// and the warnings to show (A013): a warehouse that could not be read, the cache that could
/// not be written.
pub(crate) fn warehouse_sources(
    ws: &Workspace,
    target: &AdapterTarget,
    root: &Path,
    read: SchemaRead,
    missing: &BTreeSet<Vec<String>>,
) -> (Vec<SourceDecl>, Vec<Diagnostic>) {
    let wanted: BTreeSet<String> = missing
        .iter()
        .filter(|parts| parts.len() <= 2)
        .map(|parts| parts.join("."))
        .collect();
    if wanted.is_empty() {
        return (Vec::new(), Vec::new());
    }
    let path = cache::path(root);
    let mut cache = SchemaCache::load(&path);
    let key = cache::key(target);
    let now = cache::now();
    let entry = cache.targets.entry(key).or_default();
    let to_read: Vec<String> = wanted
        .iter()
        .filter(|name| {
            read == SchemaRead::Refresh
                || entry
                    .relations
                    .get(*name)
                    .is_none_or(|r| now.saturating_sub(r.read_at) > cache::MAX_AGE.as_secs())
        })
        .cloned()
        .collect();
    let mut warnings = Vec::new();
    if !to_read.is_empty() {
        match catalog::columns(target, root, &to_read) {
            Ok(mut found) => {
                for name in &to_read {
                    match found.remove(name) {
                        Some(columns) => {
                            entry.relations.insert(
                                name.clone(),
                                CachedRelation {
                                    read_at: now,
                                    columns,
                                },
                            );
                        }
                        None => {
                            entry.relations.remove(name);
                        }
                    }
                }
                if let Err(e) = cache.save(&path) {
                    warnings.push(
                        warning(
                            ws,
                            target,
                            format!(
                                "cannot write the warehouse schema cache {}: {e}",
                                path.display()
                            ),
                        )
                        .with_help("check that .phlo/ is writable; check then reads the warehouse each time"),
                    );
                }
            }
            Err(why) => warnings.push(unreadable(ws, target, &to_read, &cache, &why, now)),
        }
    }
    let entry = &cache.targets[&cache::key(target)];
    let sources = wanted
        .iter()
        .filter_map(|name| {
            let r = entry.relations.get(name)?;
            Some(SourceDecl::in_warehouse(
                target.kind(),
                name.clone(),
                r.columns.clone(),
            ))
        })
        .collect();
    (sources, warnings)
}

/// A013 for a warehouse whose catalog could not be read: which of `to_read` are typed from
/// the cache, and how old the oldest of those is; which cannot be typed at all.
fn unreadable(
    ws: &Workspace,
    target: &AdapterTarget,
    to_read: &[String],
    cache: &SchemaCache,
    why: &str,
    now: u64,
) -> Diagnostic {
    let relations = cache.targets.get(&cache::key(target)).map(|e| &e.relations);
    let (cached, missing): (Vec<&String>, Vec<&String>) = to_read
        .iter()
        .partition(|n| relations.is_some_and(|r| r.contains_key(*n)));
    let mut message = format!(
        "cannot read the catalog of adapter `{}` ({}): {why}",
        target.name,
        target.kind()
    );
    if let Some(oldest) = cached
        .iter()
        .filter_map(|n| relations.and_then(|r| r.get(*n)))
        .map(|r| r.read_at)
        .min()
    {
        message.push_str(&format!(
            "; typed {} from the schema cache, read {} ago",
            list(&cached),
            cache::age(now.saturating_sub(oldest))
        ));
    }
    if !missing.is_empty() {
        message.push_str(&format!(
            "; {} cannot be typed (not in the cache)",
            list(&missing)
        ));
    }
    warning(ws, target, message).with_help(
        "start the warehouse (or fix the adapter's settings); `plan` and `run` refresh the cache",
    )
}

fn list(names: &[&String]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// An A013 warning at the target's section of phlo.toml.
fn warning(ws: &Workspace, target: &AdapterTarget, message: String) -> Diagnostic {
    let d = Diagnostic::warning(codes::WAREHOUSE_SCHEMA_CACHE, message).in_file("phlo.toml");
    let header = match target.name.as_str() {
        "default" => "[adapter]".to_string(),
        name => format!("[adapters.{name}]"),
    };
    let line = std::fs::read_to_string(ws.root.join("phlo.toml"))
        .ok()
        .and_then(|text| text.lines().position(|l| l.trim() == header).map(|i| i + 1));
    match line {
        Some(line) => d.at(line, 1),
        None => d,
    }
}
