//! The generated data the pages' scripts read: `search-index.js` and `graph-data.js`, each a
//! script assigning one global (a page opened from file:// may not `fetch()` a JSON file).

use serde::Serialize;
use std::collections::BTreeMap;

use super::html::{model_href, source_href};
use super::site::Site;

#[derive(Serialize)]
struct SearchEntry<'a> {
    /// Name.
    n: &'a str,
    /// `model` or `source`.
    k: &'static str,
    /// The page, from the site's root.
    u: String,
    /// Description.
    d: &'a str,
    /// Column names.
    c: Vec<&'a str>,
}

/// `window.PHLO_SEARCH = [...]`: every model and source with its description and columns.
pub fn search_index(site: &Site) -> String {
    let mut entries: Vec<SearchEntry> = site
        .models
        .iter()
        .map(|m| SearchEntry {
            n: m.inspection.name,
            k: "model",
            u: model_href(m.inspection.name),
            d: m.description.as_deref().unwrap_or(""),
            c: m.columns.iter().map(|c| c.name.as_str()).collect(),
        })
        .collect();
    entries.extend(site.sources.iter().map(|s| {
        SearchEntry {
            n: s.name,
            k: "source",
            u: source_href(s.name),
            d: s.description.unwrap_or(""),
            c: s.columns
                .iter()
                .flatten()
                .map(|c| c.name.as_str())
                .collect(),
        }
    }));
    assign("PHLO_SEARCH", &entries)
}

#[derive(Serialize)]
struct GraphData<'a> {
    /// `[name, kind, materialisation or format, page]`, sorted by name.
    nodes: Vec<(&'a str, &'static str, String, String)>,
    /// `[from, to]` indices into `nodes`: `from` is read by `to`.
    edges: Vec<(usize, usize)>,
}

/// `window.PHLO_GRAPH = {nodes, edges}`: the model-level DAG with sources.
pub fn graph_data(site: &Site) -> String {
    let mut nodes: Vec<(&str, &'static str, String, String)> = site
        .models
        .iter()
        .map(|m| {
            let name = m.inspection.name;
            let kind = m.inspection.materialization.as_str().to_string();
            (name, "model", kind, model_href(name))
        })
        .chain(site.sources.iter().map(|s| {
            let format = serde_json::to_value(s.format)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            (s.name, "source", format, source_href(s.name))
        }))
        .collect();
    nodes.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
    let index: BTreeMap<(&str, &str), usize> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| ((n.0, n.1), i))
        .collect();
    let mut edges = Vec::new();
    for m in &site.models {
        let Some(&to) = index.get(&(m.inspection.name, "model")) else {
            continue;
        };
        for dep in &m.inspection.depends_on {
            let key = match dep {
                phlo_transform_compiler::Dependency::Model(n) => (n.as_str(), "model"),
                phlo_transform_compiler::Dependency::Source(n) => (n.as_str(), "source"),
            };
            if let Some(&from) = index.get(&key) {
                edges.push((from, to));
            }
        }
    }
    edges.sort_unstable();
    edges.dedup();
    assign("PHLO_GRAPH", &GraphData { nodes, edges })
}

fn assign(global: &str, value: &impl Serialize) -> String {
    let json = serde_json::to_string(value).expect("plain data serialises");
    // Never `</script>` inside, should the file ever be inlined into a page.
    format!("window.{global} = {};\n", json.replace("</", "<\\/"))
}
