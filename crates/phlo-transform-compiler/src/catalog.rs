//! The catalog snapshot: the state of every source, read before compiling (SPEC §38). Local
//! files are identified by size and content hash, Delta tables by their latest log version,
//! Iceberg tables by current snapshot and schema id read natively from metadata.json (or, for
//! a table in an Iceberg REST catalog, from the metadata the catalog answers with).

use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::hash::sha256_file;
use phlo_transform_core::table_layout;
use phlo_transform_core::Diagnostic;
use phlo_transform_lakehouse::delta_log;
use phlo_transform_project::{SourceDecl, SourceFormat, Workspace};
use serde::Serialize;

use crate::schemas::read_schema;
use crate::source_state::{iceberg_as_of, iceberg_state, modified_as_of};
pub use crate::source_state::{AsOf, SourceState};
use crate::validate::Unreadable;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// How a source differs from what a [`CatalogSnapshot`] recorded of it (both R003).
#[derive(Clone, Debug)]
pub enum SourceDrift {
    /// Its data cannot be read now: the diagnostic `check` gives for it.
    Unreadable(Diagnostic),
    /// It reads, but is not the data recorded.
    Changed(Diagnostic),
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct CatalogSnapshot {
    pub sources: BTreeMap<String, SourceState>,
}

impl CatalogSnapshot {
    /// Reads the state of every source of the workspace. Unreadable sources become R003
    /// diagnostics and are left out of the snapshot; REST catalog sources whose catalog cannot
    /// load them are A004 and stay in it, their schema unknown (see `rest_sources`).
    pub fn load(workspace: &Workspace) -> (CatalogSnapshot, Vec<Diagnostic>) {
        let mut snapshot = CatalogSnapshot::default();
        let diags = snapshot.read(workspace, &workspace.sources);
        (snapshot, diags)
    }

    /// Reads the state of `sources` of `workspace` into the snapshot, as [`load`] does for
    /// all of them: what a compile adds for the sources found while compiling (relations only
    /// the warehouse has). Returns the diagnostics of those that cannot be read.
    ///
    /// [`load`]: CatalogSnapshot::load
    pub fn read(&mut self, workspace: &Workspace, sources: &[SourceDecl]) -> Vec<Diagnostic> {
        let mut diags = Vec::new();
        let mut remote = crate::rest_sources::load(sources);
        for source in sources {
            if let Some((state, problem)) = remote.remove(&source.name) {
                diags.extend(problem.map(|d| locate_declaration(workspace, source, d)));
                self.sources.insert(source.name.clone(), state);
                continue;
            }
            match read_state(source) {
                Ok(state) => {
                    self.sources.insert(source.name.clone(), state);
                }
                Err(unreadable) => diags.push(unreadable_source(workspace, source, unreadable)),
            }
        }
        diags
    }

    /// Source `name` read again against what this snapshot recorded; `None` when it reads as
    /// recorded (or is not a local file the snapshot read). What a run asks when a model
    /// reading the source fails, so that the failure names the source and its file instead of
    /// the engine's internal names for them.
    pub fn recheck(&self, workspace: &Workspace, name: &str) -> Option<SourceDrift> {
        let source = workspace.sources.iter().find(|s| s.name == name)?;
        let recorded = self.sources.get(name)?;
        if source.rest.is_some() || recorded.unreadable_data.is_some() {
            return None;
        }
        match read_state(source) {
            Err(unreadable) => Some(SourceDrift::Unreadable(unreadable_source(
                workspace, source, unreadable,
            ))),
            Ok(now) if now.state != recorded.state => Some(SourceDrift::Changed(
                Diagnostic::error(
                    codes::UNREADABLE_SOURCE,
                    format!(
                        "source `{}` at `{}` changed after the run checked it",
                        source.name, source.location
                    ),
                )
                .in_file(source.location.clone())
                .with_help("run again: a run reads its sources as they were when it started"),
            )),
            Ok(_) => None,
        }
    }
}

/// R003 for a source whose data cannot be read: at the line of the file at fault when that is
/// known (a malformed CSV row, a Delta log entry), else at the source's declaration.
fn unreadable_source(workspace: &Workspace, source: &SourceDecl, e: Unreadable) -> Diagnostic {
    let d = Diagnostic::error(
        codes::UNREADABLE_SOURCE,
        format!(
            "source `{}` at `{}` cannot be read: {}",
            source.name, source.location, e.reason
        ),
    );
    if let Some(line) = e.line {
        let file = e
            .file
            .as_deref()
            .map(|f| workspace_relative(workspace, f))
            .unwrap_or_else(|| source.location.clone());
        return d
            .in_file(file)
            .at(line, 1)
            .with_help("fix or replace the data; the engine reads every row of it");
    }
    let d = d
        .in_file(
            if source.origin == phlo_transform_project::SourceOrigin::Declared {
                "phlo.toml".to_string()
            } else {
                source.location.clone()
            },
        )
        .with_help("check that the location exists and is readable, or fix it in phlo.toml");
    locate_declaration(workspace, source, d)
}

/// `path` relative to the workspace root when it is inside it, else as it is.
fn workspace_relative(workspace: &Workspace, path: &Path) -> String {
    path.strip_prefix(&workspace.root)
        .unwrap_or(path)
        .display()
        .to_string()
}

/// Points a declared source's diagnostic at its `[source."…"]` header in phlo.toml.
fn locate_declaration(workspace: &Workspace, source: &SourceDecl, d: Diagnostic) -> Diagnostic {
    if source.origin != phlo_transform_project::SourceOrigin::Declared {
        return d;
    }
    let Ok(text) = std::fs::read_to_string(workspace.root.join("phlo.toml")) else {
        return d;
    };
    let header = format!("\"{}\"", source.name);
    match text
        .lines()
        .position(|l| l.trim_start().starts_with("[source.") && l.contains(&header))
    {
        Some(i) => d.at(i + 1, 1),
        None => d,
    }
}

fn read_state(source: &SourceDecl) -> Result<SourceState, Unreadable> {
    let (state, read_path, as_of) = identify(source).map_err(|reason| Unreadable {
        reason,
        file: None,
        line: None,
    })?;
    let path = &source.path;
    // A Delta table is validated by its log (under the table directory), a file by itself.
    let data = match source.format {
        SourceFormat::Delta => path,
        _ => &read_path,
    };
    crate::validate::validate(source.format, data)?;
    let schema = read_schema(source.format, &read_path, path, &source.columns);
    Ok(SourceState {
        name: source.name.clone(),
        format: source.format,
        state,
        as_of,
        read_path,
        schema,
        unreadable_data: None,
    })
}

/// The state of a source's data (what identifies its contents), the file to read and the
/// instant the contents are current as of.
fn identify(source: &SourceDecl) -> Result<(String, PathBuf, Option<AsOf>), String> {
    let path = &source.path;
    Ok(match source.format {
        SourceFormat::Parquet | SourceFormat::Csv => {
            let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
            if !meta.is_file() {
                return Err("not a file".into());
            }
            let hash = sha256_file(path).map_err(|e| e.to_string())?;
            (
                format!("sha256:{hash},size:{}", meta.len()),
                path.clone(),
                modified_as_of(&meta),
            )
        }
        SourceFormat::Delta => {
            let version = delta_version(path)?;
            let committed = delta_log::commit_timestamp_ms(path, version)
                .and_then(chrono::DateTime::from_timestamp_millis);
            (format!("delta:v{version}"), path.clone(), committed)
        }
        SourceFormat::Declared => {
            let mut f = phlo_transform_core::Fingerprint::new("declared-columns");
            for (name, ty) in &source.columns {
                f.field(name, ty);
            }
            (
                format!("declared:{}", &f.finish()[..16]),
                path.clone(),
                None,
            )
        }
        SourceFormat::Iceberg => {
            let metadata = iceberg_metadata_file(path)?;
            let text = std::fs::read_to_string(&metadata).map_err(|e| e.to_string())?;
            let doc: serde_json::Value =
                serde_json::from_str(&text).map_err(|e| format!("invalid metadata.json: {e}"))?;
            (iceberg_state(&doc), metadata, iceberg_as_of(&doc))
        }
    })
}

/// Latest committed version: the highest `NNNNN.json` in `_delta_log`.
fn delta_version(dir: &Path) -> Result<u64, String> {
    delta_log::latest_version(dir)
        .map_err(|e| format!("{}: {e}", delta_log::log_dir(dir).display()))?
        .ok_or_else(|| "the Delta log has no commits".to_string())
}

/// A metadata.json path as given, or the newest one in `<table>/metadata/`
/// (by `version-hint.text`, else the highest version prefix).
pub fn iceberg_metadata_file(path: &Path) -> Result<PathBuf, String> {
    if path.is_file() {
        return Ok(path.to_path_buf());
    }
    let dir = path.join(table_layout::ICEBERG_METADATA_DIR);
    if let Ok(hint) = std::fs::read_to_string(dir.join("version-hint.text")) {
        let candidate = dir.join(format!("v{}.metadata.json", hint.trim()));
        if candidate.is_file() {
            return Ok(candidate);
        }
    }
    let entries = std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().to_string();
            let stem = name.strip_suffix(table_layout::ICEBERG_METADATA_SUFFIX)?;
            let digits: String = stem
                .trim_start_matches('v')
                .chars()
                .take_while(|c| c.is_ascii_digit())
                .collect();
            Some((digits.parse::<u64>().ok()?, e.path()))
        })
        .max()
        .map(|(_, p)| p)
        .ok_or_else(|| format!("no *.metadata.json in {}", dir.display()))
}
