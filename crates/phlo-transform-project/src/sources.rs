//! External sources: declared in `phlo.toml` (`[source."raw.orders"] location = …`) or found by
//! convention under the sources folder (`sources/<namespace>/<name>.parquet|.csv`, Delta
//! directories with a `_delta_log`, Iceberg tables with `metadata/*.metadata.json`). A
//! declared source may instead name a table in an Iceberg REST catalog (`catalog`, `table`).

use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::table_layout::{self, TableLayout};
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

    /// What the location looks like on disk, when it exists (the table layouts are
    /// `phlo_transform_core::table_layout`'s).
    pub fn detect(path: &Path) -> Option<Self> {
        Some(match table_layout::detect(path)? {
            TableLayout::Parquet => Self::Parquet,
            TableLayout::Csv => Self::Csv,
            TableLayout::Delta => Self::Delta,
            TableLayout::Iceberg => Self::Iceberg,
        })
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
    /// The freshness requirement, when declared (SPEC §34).
    pub freshness: Option<crate::freshness::Freshness>,
    /// Declared columns `(name, SQL type)`, in order; empty when not declared.
    pub columns: Vec<(String, String)>,
    /// The Iceberg REST catalog table this source is, when declared with `catalog`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rest: Option<RestTable>,
}

/// A table in an Iceberg REST catalog: `[source."x.y"] catalog = "http://…", table = "ns.t"`.
#[derive(Clone, Debug, Serialize)]
pub struct RestTable {
    /// The catalog's base URL, as written (serialised without credentials).
    #[serde(serialize_with = "redacted_url")]
    pub catalog: String,
    /// Namespace levels (`a.b.t` → `["a", "b"]`).
    pub namespace: Vec<String>,
    pub table: String,
    pub warehouse: Option<String>,
    /// The name of the environment variable holding the bearer token (never its value).
    pub token_env: Option<String>,
}

impl RestTable {
    /// `namespace.table`, as in phlo.toml.
    pub fn qualified(&self) -> String {
        format!("{}.{}", self.namespace.join("."), self.table)
    }
}

/// The REST catalog table of a declared source, if it names one; a message when the keys do
/// not make one.
fn rest_table(name: &str, section: &SourceSection) -> Result<Option<RestTable>, String> {
    let Some(catalog) = &section.catalog else {
        let stray: Vec<&str> = [
            ("`table`", section.table.is_some()),
            ("`warehouse`", section.warehouse.is_some()),
            ("`token_env`", section.token_env.is_some()),
        ]
        .into_iter()
        .filter_map(|(key, set)| set.then_some(key))
        .collect();
        if stray.is_empty() {
            return Ok(None);
        }
        return Err(format!(
            "source `{name}` sets {} without `catalog`",
            stray.join(", ")
        ));
    };
    phlo_transform_core::secrets::register_url(catalog);
    if section.location.is_some() {
        return Err(format!(
            "source `{name}` sets both `location` and `catalog`; a catalog source has no location"
        ));
    }
    if let Some(format) = section.format.as_deref() {
        if !format.eq_ignore_ascii_case("iceberg") {
            return Err(format!(
                "source `{name}` has a REST `catalog` but format `{format}`; REST catalog tables are iceberg"
            ));
        }
    }
    if !(catalog.starts_with("http://") || catalog.starts_with("https://")) {
        return Err(format!(
            "source `{name}`: `catalog` must be the http(s) base URL of an Iceberg REST catalog, not `{catalog}`"
        ));
    }
    let qualified = section.table.as_deref().unwrap_or(name);
    let mut namespace: Vec<String> = qualified.split('.').map(str::to_string).collect();
    let table = namespace.pop().unwrap_or_default();
    if namespace.is_empty()
        || namespace
            .iter()
            .chain([&table])
            .any(|p| p.trim().is_empty())
    {
        return Err(format!(
            "source `{name}`: the REST catalog table must be `namespace.table`, not `{qualified}`"
        ));
    }
    Ok(Some(RestTable {
        catalog: catalog.clone(),
        namespace,
        table,
        warehouse: section.warehouse.clone(),
        token_env: section.token_env.clone(),
    }))
}

fn redacted_url<S: serde::Serializer>(url: &str, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&phlo_transform_core::secrets::redact_url(url))
}

impl SourceDecl {
    /// `source://raw/orders`.
    pub fn uri(&self) -> String {
        format!("source://{}", self.name.replace('.', "/"))
    }

    /// Whether the source's data is local files at `path` (a file, or a table's folder), so a
    /// change of it shows in their sizes and modification times ([`crate::fingerprint`]):
    /// neither a REST catalog table nor a relation of a warehouse ([`SourceDecl::in_warehouse`],
    /// located as `<adapter>:<name>` even once pinned to a table's metadata file).
    pub fn in_local_files(&self) -> bool {
        let in_warehouse = crate::AdapterKind::ALL.iter().any(|kind| {
            self.location
                .strip_prefix(kind.as_str())
                .is_some_and(|rest| rest.starts_with(':'))
        });
        self.rest.is_none() && !self.path.as_os_str().is_empty() && !in_warehouse
    }

    /// A relation that lives only in the warehouse of an `adapter` target (`postgres`,
    /// `duckdb`, `trino`), typed from that warehouse's catalog: no file, its columns declared
    /// as the catalog gave them, located as `<adapter>:<name>`.
    pub fn in_warehouse(
        adapter: crate::AdapterKind,
        name: String,
        columns: Vec<(String, String)>,
    ) -> Self {
        SourceDecl {
            location: format!("{adapter}:{name}"),
            name,
            path: PathBuf::new(),
            format: SourceFormat::Declared,
            origin: SourceOrigin::Declared,
            owner: None,
            description: None,
            freshness: None,
            columns,
            rest: None,
        }
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
        if let Err(reason) = phlo_transform_core::check_name(name) {
            diags.push(
                Diagnostic::error(
                    codes::INVALID_NAME,
                    format!("source name `{name}` is not a valid name: {reason}"),
                )
                .in_file("phlo.toml")
                .with_help("a source is a dotted name of letters, digits and `_`, such as [source.\"raw.orders\"]"),
            );
            continue;
        }
        let rest = match rest_table(name, section) {
            Ok(rest) => rest,
            Err(message) => {
                diags.push(
                    Diagnostic::error(codes::INVALID_SOURCE, message)
                        .in_file("phlo.toml")
                        .with_help(format!(
                            "an Iceberg REST catalog source is declared as [source.\"{name}\"] catalog = \"http://host:8181\", table = \"namespace.table\" (optional: warehouse, token_env)"
                        )),
                );
                continue;
            }
        };
        let freshness = match crate::freshness::Freshness::from_section(
            section.freshness.as_deref(),
            section.timestamp_column.as_deref(),
            section.freshness_policy.as_deref(),
        ) {
            Ok(f) => f,
            Err(message) => {
                diags.push(
                    Diagnostic::error(codes::INVALID_SOURCE, format!("source `{name}`: {message}"))
                        .in_file("phlo.toml")
                        .with_help(format!(
                            "declare [source.\"{name}\"] freshness = \"6h\", timestamp_column = \"loaded_at\" (optional: freshness_policy = \"warn\" or \"block\")"
                        )),
                );
                continue;
            }
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
            // Found through its catalog when the catalog snapshot is read.
            // Shown everywhere (manifest, lineage, messages): never with its credentials.
            _ if rest.is_some() => (
                phlo_transform_core::secrets::redact_url(
                    section.catalog.as_deref().unwrap_or_default(),
                ),
                root.to_path_buf(),
                SourceFormat::Iceberg,
            ),
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
            freshness,
            columns,
            rest,
        });
    }
    (out, diags)
}

/// Sources found under `dir`: `dir/<ns>/.../<name>.<ext>` is `<ns>. … .<name>`. A file whose
/// path does not give a valid name is reported (P009), not registered.
pub(crate) fn by_convention(root: &Path, dir: &str) -> (Vec<SourceDecl>, Vec<Diagnostic>) {
    let base = root.join(dir);
    let mut out = Vec::new();
    let mut diags = Vec::new();
    if !base.is_dir() {
        return (out, diags);
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
            for ext in table_layout::FILE_SUFFIXES {
                if let Some(stem) = last.strip_suffix(ext) {
                    *last = stem.to_string();
                }
            }
        }
        let location = format!("{dir}/{}", rel.to_string_lossy().replace('\\', "/"));
        let name = segments.join(".");
        if let Err(reason) = phlo_transform_core::check_name(&name) {
            diags.push(
                Diagnostic::warning(
                    codes::INVALID_NAME,
                    format!("`{location}` does not give a valid source name, so it is not a source: {reason}"),
                )
                .in_file(&location)
                .with_help("name source files and folders with letters, digits and `_`, or declare the source in phlo.toml [source.\"ns.name\"] location = …"),
            );
            continue;
        }
        out.push(SourceDecl {
            name,
            location,
            path: path.to_path_buf(),
            format,
            origin: SourceOrigin::Convention,
            owner: None,
            description: None,
            freshness: None,
            columns: Vec::new(),
            rest: None,
        });
    }
    (out, diags)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(toml_text: &str) -> SourceSection {
        toml::from_str(toml_text).unwrap()
    }

    #[test]
    fn only_sources_in_local_files_are_left_to_the_file_poll() {
        let warehouse = |kind| SourceDecl::in_warehouse(kind, "tpch.tiny.nation".into(), vec![]);
        let mut pinned = warehouse(crate::AdapterKind::Trino);
        // Trino's Iceberg tables are pinned to their metadata file, still in the warehouse.
        pinned.path = PathBuf::from("/lake/nation/metadata/00001");
        pinned.format = SourceFormat::Iceberg;
        assert!(!warehouse(crate::AdapterKind::Postgres).in_local_files());
        assert!(!pinned.in_local_files());
        let mut file = pinned.clone();
        file.location = "sources/raw/orders.csv".into();
        file.path = PathBuf::from("/ws/sources/raw/orders.csv");
        assert!(file.in_local_files());
        let s = section("catalog = \"http://cat:8181\"");
        file.rest = rest_table("raw.events", &s).unwrap();
        assert!(!file.in_local_files(), "a REST catalog table");
    }

    #[test]
    fn a_rest_catalog_source_names_its_table() {
        let s = section("catalog = \"http://cat:8181\"\ntoken_env = \"TOKEN\"");
        let rest = rest_table("raw.events", &s).unwrap().unwrap();
        assert_eq!(
            (rest.namespace.clone(), rest.table.as_str()),
            (vec!["raw".to_string()], "events")
        );
        let s = section("catalog = \"https://cat/api\"\ntable = \"a.b.t\"\nformat = \"Iceberg\"");
        let rest = rest_table("raw.events", &s).unwrap().unwrap();
        assert_eq!(rest.namespace, ["a", "b"]);
        assert_eq!(rest.qualified(), "a.b.t");
        let (decls, diags) = declared(Path::new("/ws"), &[("raw.events".to_string(), s)].into());
        assert!(diags.is_empty(), "{diags:?}");
        assert_eq!(decls[0].format, SourceFormat::Iceberg);
        assert_eq!(decls[0].location, "https://cat/api");
    }

    #[test]
    fn rest_catalog_keys_are_checked() {
        for (text, says) in [
            ("table = \"a.t\"", "sets `table` without `catalog`"),
            (
                "catalog = \"http://c\"\nlocation = \"x\"",
                "both `location` and `catalog`",
            ),
            (
                "catalog = \"http://c\"\nformat = \"delta\"",
                "format `delta`",
            ),
            ("catalog = \"c:8181\"", "must be the http(s) base URL"),
            (
                "catalog = \"http://c\"\ntable = \"t\"",
                "must be `namespace.table`, not `t`",
            ),
        ] {
            let err = rest_table("raw.events", &section(text)).unwrap_err();
            assert!(err.contains(says), "{text}: {err}");
        }
        assert!(rest_table("raw.events", &section("location = \"x\""))
            .unwrap()
            .is_none());
    }
}
