//! Writing the site: the folder replaced whole (it is ours when it holds [`MARKER`]), every
//! file written in a fixed order.

use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;
use serde::Serialize;
use std::path::{Path, PathBuf};

use super::html::file_name;
use super::site::Site;
use super::{pages, scripts};

/// The file that marks a folder as a site `docs` wrote, so writing again may replace it.
pub const MARKER: &str = ".phlo-docs";

const STYLE: &str = include_str!("assets/style.css");
const SEARCH_JS: &str = include_str!("assets/search.js");
const GRAPH_JS: &str = include_str!("assets/graph.js");

/// What `docs` wrote.
#[derive(Debug, Serialize)]
pub struct DocsReport {
    pub out: String,
    /// The page to open.
    pub index: String,
    pub pages: usize,
    pub files: usize,
    pub models: usize,
    pub sources: usize,
    /// Runs found in the state (of the newest read).
    pub runs: usize,
}

fn write_failed(path: &Path, e: std::io::Error) -> Diagnostic {
    Diagnostic::error(
        codes::DOC_WRITE_FAILED,
        format!("cannot write {}: {e}", path.display()),
    )
    .with_help("choose a writable folder with --out")
}

/// Empties `out` when it is an earlier site, refuses it when it holds anything else.
fn prepare(out: &Path) -> Result<(), Diagnostic> {
    if out.is_file() {
        return Err(not_ours(out));
    }
    if out.is_dir() {
        let mut entries = std::fs::read_dir(out).map_err(|e| write_failed(out, e))?;
        if entries.next().is_some() {
            if !out.join(MARKER).is_file() {
                return Err(not_ours(out));
            }
            std::fs::remove_dir_all(out).map_err(|e| write_failed(out, e))?;
        }
    }
    for dir in ["", "models", "sources", "assets"] {
        let d = out.join(dir);
        std::fs::create_dir_all(&d).map_err(|e| write_failed(&d, e))?;
    }
    Ok(())
}

fn not_ours(out: &Path) -> Diagnostic {
    Diagnostic::error(
        codes::DOC_OUTPUT_NOT_DOCS,
        format!(
            "{} exists and is not a site `docs` wrote (no {MARKER} in it): nothing was written",
            out.display()
        ),
    )
    .with_help("pass --out with an empty or new folder, or one an earlier `docs` wrote")
}

pub fn write_site(site: &Site, out: &Path) -> Result<DocsReport, Diagnostic> {
    prepare(out)?;
    let mut files: Vec<(PathBuf, String)> = vec![
        (out.join(MARKER), "written by phlo-transform docs\n".into()),
        (out.join("assets/style.css"), STYLE.into()),
        (out.join("assets/search.js"), SEARCH_JS.into()),
        (out.join("assets/graph.js"), GRAPH_JS.into()),
        (out.join("search-index.js"), scripts::search_index(site)),
        (out.join("graph-data.js"), scripts::graph_data(site)),
        (out.join("index.html"), pages::index(site)),
        (out.join("graph.html"), pages::graph(site)),
    ];
    let mut pages = 2;
    for m in &site.models {
        files.push((
            out.join("models").join(file_name(m.inspection.name)),
            pages::model(site, m),
        ));
        pages += 1;
    }
    for s in &site.sources {
        files.push((
            out.join("sources").join(file_name(s.name)),
            pages::source(s),
        ));
        pages += 1;
    }
    for (path, text) in &files {
        std::fs::write(path, text).map_err(|e| write_failed(path, e))?;
    }
    Ok(DocsReport {
        out: out.display().to_string(),
        index: out.join("index.html").display().to_string(),
        pages,
        files: files.len(),
        models: site.models.len(),
        sources: site.sources.len(),
        runs: site.runs,
    })
}
