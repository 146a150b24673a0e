//! External sources: declared in `phlo.toml` (`[source."raw.orders"] location = …`) or found by
//! convention under the sources folder (`sources/<namespace>/<name>.parquet|.csv`, Delta
//! directories with a `_delta_log`, Iceberg tables with `metadata/*.metadata.json`).

use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::config::SourceSection;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SourceFormat {
    Parquet,
    Csv,
    Delta,
    Iceberg,
    /// Schema-only: declared columns, no data.
    Declared,
}

impl SourceFormat {
    fn parse(text: &str) -> Option<Self> {
        match text.to_ascii_lowercase().as_str() {
            "parquet" => Some(Self::Parquet),
            "csv" => Some(Self::Csv),
            "delta" => Some(Self::Delta),
            "iceberg" => Some(Self::Iceberg),
            _ => None,
        }
    }

    /// What the location looks like on disk, when it exists.
    pub fn detect(path: &Path) -> Option<Self> {
        if path.is_dir() {
            if path.join("_delta_log").is_dir() {
                return Some(Self::Delta);
            }
            if path.join("metadata").is_dir() {
                return Some(Self::Iceberg);
            }
            return None;
        }
        let name = path.file_name()?.to_str()?.to_ascii_lowercase();
        if name.ends_with(".metadata.json") {
            Some(Self::Iceberg)
        } else if name.ends_with(".parquet") {
            Some(Self::Parquet)
        } else if name.ends_with(".csv") {
            Some(Self::Csv)
        } else {
            None
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SourceOrigin {
    Declared,
    Convention,
}

/// One external relation the workspace can read.
#[derive(Clone, Debug, Serialize)]
pub struct SourceDecl {
    /// Dotted, lower-case name used in SQL (`raw.orders`).
    pub name: String,
    /// Workspace-relative (or absolute, when declared so) location as written.
    pub location: String,
    #[serde(skip)]
    pub path: PathBuf,
    pub format: SourceFormat,
    pub origin: SourceOrigin,
    pub owner: Option<String>,
    pub description: Option<String>,
    pub freshness: Option<String>,
    pub timestamp_column: Option<String>,
    /// Declared columns `(name, SQL type)`, in order; empty when not declared.
    pub columns: Vec<(String, String)>,
}

impl SourceDecl {
    /// `source://raw/orders`.
    pub fn uri(&self) -> String {
        format!("source://{}", self.name.replace('.', "/"))
    }
}

pub(crate) fn declared(
    root: &Path,
    sections: &BTreeMap<String, SourceSection>,
) -> (Vec<SourceDecl>, Vec<Diagnostic>) {
    let mut out = Vec::new();
    let mut diags = Vec::new();
    for (name, section) in sections {
        let err = |msg: String| {
            Diagnostic::error(codes::INVALID_SOURCE, msg)
                .in_file("phlo.toml")
                .with_help(format!(
                    "declare it as [source.\"{name}\"] location = \"data/{}.parquet\" (format parquet, csv, delta or iceberg)",
                    name.rsplit('.').next().unwrap_or(name)
                ))
        };
        let mut columns = Vec::new();
        for (column, ty) in section.columns.iter().flatten() {
            match ty.as_str() {
                Some(t) => columns.push((column.to_lowercase(), t.trim().to_lowercase())),
                None => diags.push(err(format!("source `{name}`: the type of column `{column}` must be a string such as \"bigint\""))),
            }
        }
        // A source without a location is schema-only: its declared columns, no data.
        let (location, path, format) = match &section.location {
            None if columns.is_empty() => {
                diags.push(err(format!(
                    "source `{name}` has no `location` and no `columns`"
                )));
                continue;
            }
            None => (String::new(), root.to_path_buf(), SourceFormat::Declared),
            Some(location) => {
                let path = root.join(location);
                let format = match &section.format {
                    Some(f) => SourceFormat::parse(f)
                        .ok_or_else(|| format!("source `{name}` has unknown format `{f}`")),
                    None => SourceFormat::detect(&path).ok_or_else(|| {
                        format!("cannot tell the format of source `{name}` from `{location}`")
                    }),
                };
                match format {
                    Ok(format) => (location.clone(), path, format),
                    Err(message) => {
                        diags.push(err(message));
                        continue;
                    }
                }
            }
        };
        out.push(SourceDecl {
            name: name.to_lowercase(),
            location,
            path,
            format,
            origin: SourceOrigin::Declared,
            owner: section.owner.clone(),
            description: section.description.clone(),
            freshness: section.freshness.clone(),
            timestamp_column: section.timestamp_column.clone(),
            columns,
        });
    }
    (out, diags)
}

/// Sources found under `dir`: `dir/<ns>/.../<name>.<ext>` is `<ns>. … .<name>`.
pub(crate) fn by_convention(root: &Path, dir: &str) -> Vec<SourceDecl> {
    let base = root.join(dir);
    let mut out = Vec::new();
    if !base.is_dir() {
        return out;
    }
    let mut walker = walkdir::WalkDir::new(&base)
        .min_depth(2)
        .sort_by_file_name()
        .into_iter();
    while let Some(Ok(entry)) = walker.next() {
        let path = entry.path();
        let Some(format) = SourceFormat::detect(path) else {
            continue;
        };
        if entry.file_type().is_dir() {
            walker.skip_current_dir(); // a table directory: do not look inside
        }
        let rel = path.strip_prefix(&base).expect("below base");
        let mut segments: Vec<String> = rel
            .iter()
            .map(|s| s.to_string_lossy().to_lowercase())
            .collect();
        if let Some(last) = segments.last_mut() {
            for ext in [".metadata.json", ".parquet", ".csv"] {
                if let Some(stem) = last.strip_suffix(ext) {
                    *last = stem.to_string();
                }
            }
        }
        out.push(SourceDecl {
            name: segments.join("."),
            location: format!("{dir}/{}", rel.to_string_lossy().replace('\\', "/")),
            path: path.to_path_buf(),
            format,
            origin: SourceOrigin::Convention,
            owner: None,
            description: None,
            freshness: None,
            timestamp_column: None,
            columns: Vec::new(),
        });
    }
    out
}
