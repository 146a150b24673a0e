//! The pages: the index (lists and search), one per model, one per source, the graph view.

use phlo_transform_compiler::Dependency;

use super::html::{escape, model_href, page, source_href};
use super::site::{ModelDoc, Site};
use super::sql::highlight;
use super::svg::lineage_svg;
use crate::inspect::SourceInspection;

/// A link from a page in `models/` or `sources/` to a dependency's page.
/// A `<ul>` of links to `items`' pages, or "nothing".
fn link_list(body: &mut String, items: impl Iterator<Item = Dependency>) {
    body.push_str("<ul>\n");
    let mut any = false;
    for d in items {
        any = true;
        body.push_str(&format!("<li>{}</li>\n", dependency_link(&d)));
    }
    if !any {
        body.push_str("<li class=\"none\">nothing</li>\n");
    }
    body.push_str("</ul>\n");
}

/// Model names as dependencies to link to.
fn models<S: ToString>(names: &[S]) -> impl Iterator<Item = Dependency> + '_ {
    names.iter().map(|n| Dependency::Model(n.to_string()))
}

fn dependency_link(d: &Dependency) -> String {
    match d {
        Dependency::Model(n) => format!(
            "<a href=\"../{}\">{}</a> <span class=\"tag\">model</span>",
            escape(&model_href(n)),
            escape(n)
        ),
        Dependency::Source(n) => format!(
            "<a href=\"../{}\">{}</a> <span class=\"tag\">source</span>",
            escape(&source_href(n)),
            escape(n)
        ),
    }
}

fn first_line(text: Option<&str>) -> String {
    escape(text.and_then(|t| t.lines().next()).unwrap_or(""))
}

fn paragraph(text: Option<&str>) -> String {
    match text {
        Some(t) => format!("<p class=\"description\">{}</p>\n", escape(t)),
        None => "<p class=\"description none\">No description.</p>\n".to_string(),
    }
}

pub fn index(site: &Site) -> String {
    let mut body = String::from(
        "<h1>Workspace documentation</h1>\n<form id=\"search\" onsubmit=\"return false\"><input id=\"q\" name=\"q\" type=\"search\" placeholder=\"Search models, sources, columns, descriptions\" autocomplete=\"off\"></form>\n<ul id=\"results\"></ul>\n",
    );
    body.push_str(&format!(
        "<h2>Models ({})</h2>\n<table class=\"list\"><thead><tr><th>Model</th><th>Materialisation</th><th>Owner</th><th>Last result</th><th>Description</th></tr></thead><tbody>\n",
        site.models.len()
    ));
    for m in &site.models {
        let last = m
            .history
            .first()
            .map(|h| escape(&h.node.status))
            .unwrap_or_else(|| "never run".into());
        body.push_str(&format!(
            "<tr><td><a href=\"{}\">{}</a></td><td>{}</td><td>{}</td><td>{last}</td><td>{}</td></tr>\n",
            escape(&model_href(m.inspection.name)),
            escape(m.inspection.name),
            m.inspection.materialization.as_str(),
            escape(m.owner.unwrap_or("")),
            first_line(m.description.as_deref())
        ));
    }
    body.push_str("</tbody></table>\n");
    body.push_str(&format!(
        "<h2>Sources ({})</h2>\n<table class=\"list\"><thead><tr><th>Source</th><th>Location</th><th>Owner</th><th>Description</th></tr></thead><tbody>\n",
        site.sources.len()
    ));
    for s in &site.sources {
        body.push_str(&format!(
            "<tr><td><a href=\"{}\">{}</a></td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
            escape(&source_href(s.name)),
            escape(s.name),
            escape(s.location),
            escape(s.owner.unwrap_or("")),
            first_line(s.description)
        ));
    }
    body.push_str("</tbody></table>\n");
    if site.runs == 0 {
        body.push_str(
            "<p class=\"none\">The state records no run: the workspace was never run.</p>\n",
        );
    }
    page(
        "Workspace",
        "",
        &body,
        &["search-index.js", "assets/search.js"],
    )
}

pub fn model(site: &Site, m: &ModelDoc) -> String {
    let i = &m.inspection;
    let href = |dataset: &str| {
        if site.models.iter().any(|o| o.inspection.name == dataset) {
            Some(format!("../{}", model_href(dataset)))
        } else if site.sources.iter().any(|s| s.name == dataset) {
            Some(format!("../{}", source_href(dataset)))
        } else {
            None
        }
    };
    let mut body = format!(
        "<h1>{} <span class=\"tag\">model</span></h1>\n{}",
        escape(i.name),
        paragraph(m.description.as_deref())
    );
    body.push_str(&format!(
        "<dl class=\"facts\"><dt>Path</dt><dd><code>{}</code></dd><dt>Owner</dt><dd>{}</dd><dt>Materialisation</dt><dd>{}</dd><dt>Version</dt><dd><code>{}</code> ({})</dd></dl>\n",
        escape(i.path),
        escape(m.owner.unwrap_or("none")),
        i.materialization.as_str(),
        escape(i.state.desired.as_deref().unwrap_or("unknown")),
        escape(i.state.status),
    ));
    body.push_str("<h2 id=\"columns\">Columns</h2>\n");
    if let Some(why) = m.schema_unknown {
        body.push_str(&format!(
            "<p class=\"none\">Schema unknown: {}</p>\n",
            escape(why)
        ));
    } else {
        body.push_str("<table class=\"columns\"><thead><tr><th>Column</th><th>Type</th><th>Nullable</th><th>Description</th><th>From</th></tr></thead><tbody>\n");
        for c in &m.columns {
            let from: Vec<String> = c.direct.iter().map(|d| escape(d)).collect();
            body.push_str(&format!(
                "<tr><td><code>{}</code></td><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                escape(&c.name),
                escape(&c.data_type),
                if c.nullable { "yes" } else { "no" },
                escape(c.description.as_deref().unwrap_or("")),
                from.join(", ")
            ));
        }
        body.push_str("</tbody></table>\n");
    }
    body.push_str("<h2 id=\"lineage\">Column lineage</h2>\n");
    body.push_str(&lineage_svg(&m.columns, &href));
    body.push_str("<h2 id=\"upstream\">Upstream</h2>\n");
    link_list(&mut body, i.depends_on.iter().cloned());
    body.push_str("<h2 id=\"downstream\">Downstream</h2>\n");
    link_list(&mut body, models(&i.used_by));
    body.push_str("<h2 id=\"tests\">Tests</h2>\n");
    if m.tests.is_empty() {
        body.push_str("<p class=\"none\">No tests.</p>\n");
    } else {
        body.push_str("<table><thead><tr><th>Test</th><th>Last result</th><th>Run</th><th>Finished</th></tr></thead><tbody>\n");
        for t in &m.tests {
            let (status, run, at) = match &t.last {
                Some((run, n)) => (
                    n.status.as_str(),
                    run.as_str(),
                    n.finished_at
                        .as_deref()
                        .or(n.started_at.as_deref())
                        .unwrap_or(""),
                ),
                None => ("never run", "", ""),
            };
            body.push_str(&format!(
                "<tr><td>{}</td><td class=\"status {}\">{}</td><td><code>{}</code></td><td>{}</td></tr>\n",
                escape(t.name),
                escape(status),
                escape(status),
                escape(run),
                escape(at)
            ));
        }
        body.push_str("</tbody></table>\n");
    }
    body.push_str("<h2 id=\"history\">Run history</h2>\n");
    if m.history.is_empty() {
        body.push_str("<p class=\"none\">Never run.</p>\n");
    } else {
        body.push_str("<table class=\"history\"><thead><tr><th>Started</th><th>Run</th><th>Environment</th><th>Command</th><th>Result</th><th>Duration</th><th>Rows</th><th>Error</th></tr></thead><tbody>\n");
        for h in &m.history {
            let n = &h.node;
            body.push_str(&format!(
                "<tr><td>{}</td><td><code>{}</code></td><td>{}</td><td>{}</td><td class=\"status {}\">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                escape(&h.run_started_at),
                escape(&h.run_id),
                escape(&h.environment),
                escape(&h.command),
                escape(&n.status),
                escape(&n.status),
                n.duration_ms.map(|d| format!("{d} ms")).unwrap_or_default(),
                n.rows.map(|r| r.to_string()).unwrap_or_default(),
                escape(&[n.error_code.as_deref(), n.error_message.as_deref()].iter().flatten().copied().collect::<Vec<_>>().join(": "))
            ));
        }
        body.push_str("</tbody></table>\n");
    }
    body.push_str(&format!(
        "<h2 id=\"sql\">SQL</h2>\n<pre class=\"sql\">{}</pre>\n",
        highlight(m.text)
    ));
    page(i.name, "../", &body, &[])
}

pub fn source(s: &SourceInspection) -> String {
    let mut body = format!(
        "<h1>{} <span class=\"tag\">source</span></h1>\n{}",
        escape(s.name),
        paragraph(s.description)
    );
    let format = serde_json::to_value(s.format)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    body.push_str(&format!(
        "<dl class=\"facts\"><dt>Location</dt><dd><code>{}</code></dd><dt>Format</dt><dd>{}</dd><dt>Owner</dt><dd>{}</dd><dt>State</dt><dd>{}</dd></dl>\n<h2 id=\"columns\">Columns</h2>\n",
        escape(s.location),
        escape(&format),
        escape(s.owner.unwrap_or("none")),
        escape(s.state.unwrap_or("unreadable")),
    ));
    match &s.columns {
        Some(columns) => {
            body.push_str("<table class=\"columns\"><thead><tr><th>Column</th><th>Type</th></tr></thead><tbody>\n");
            for c in columns {
                body.push_str(&format!(
                    "<tr><td><code>{}</code></td><td><code>{}</code></td></tr>\n",
                    escape(&c.name),
                    escape(&c.data_type)
                ));
            }
            body.push_str("</tbody></table>\n");
        }
        None => body.push_str("<p class=\"none\">Schema unknown.</p>\n"),
    }
    body.push_str("<h2 id=\"downstream\">Read by</h2>\n");
    link_list(&mut body, models(&s.used_by));
    page(s.name, "../", &body, &[])
}

pub fn graph(site: &Site) -> String {
    let body = format!(
        "<h1>Graph</h1>\n<form id=\"controls\" onsubmit=\"return false\">\
<label>Filter <input id=\"filter\" type=\"search\" placeholder=\"name contains\"></label> \
<label>Focus on <input id=\"focus\" list=\"names\" placeholder=\"model or source\"></label> \
<label>up <input id=\"up\" type=\"number\" min=\"0\" max=\"20\" value=\"2\"></label> \
<label>down <input id=\"down\" type=\"number\" min=\"0\" max=\"20\" value=\"2\"></label> \
<button id=\"apply\" type=\"button\">Show</button> <button id=\"all\" type=\"button\">Draw all</button></form>\n\
<p id=\"status\">{} models and {} sources.</p>\n<datalist id=\"names\"></datalist>\n<div id=\"canvas\"><svg id=\"graph\" xmlns=\"http://www.w3.org/2000/svg\"></svg></div>\n",
        site.models.len(),
        site.sources.len()
    );
    page("Graph", "", &body, &["graph-data.js", "assets/graph.js"])
}
