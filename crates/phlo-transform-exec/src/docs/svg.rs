//! A model's column-lineage diagram as inline SVG: its input columns one hop up on the left
//! (sorted by name), the model's columns on the right (in schema order), a line from each
//! input to each column computed from it (dashed where the input only filters, joins or
//! groups). The layout is a function of the names alone, so it is the same on every run.

use std::collections::BTreeSet;

use super::html::escape;
use super::site::ColumnDoc;

const ROW: usize = 24;
const TOP: usize = 28;
const LEFT_X: usize = 8;
const BOX_W: usize = 300;
const RIGHT_X: usize = 480;

/// The diagram; `href` links an input dataset to its page when it has one.
pub fn lineage_svg(columns: &[ColumnDoc], href: &dyn Fn(&str) -> Option<String>) -> String {
    let inputs: Vec<&str> = columns
        .iter()
        .flat_map(|c| c.direct.iter().chain(&c.indirect))
        .map(String::as_str)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let rows = inputs.len().max(columns.len()).max(1);
    let height = TOP + rows * ROW + 8;
    let width = RIGHT_X + BOX_W + 8;
    let y = |row: usize| TOP + row * ROW + ROW / 2;
    let mut out = format!(
        "<svg class=\"lineage\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" role=\"img\" aria-label=\"column lineage\">\n<text class=\"head\" x=\"{LEFT_X}\" y=\"16\">inputs (one hop up)</text><text class=\"head\" x=\"{RIGHT_X}\" y=\"16\">columns</text>\n"
    );
    for (col_row, col) in columns.iter().enumerate() {
        for (kind, names) in [("direct", &col.direct), ("indirect", &col.indirect)] {
            for name in names {
                let Ok(row) = inputs.binary_search(&name.as_str()) else {
                    continue;
                };
                out.push_str(&format!(
                    "<line class=\"{kind}\" x1=\"{}\" y1=\"{}\" x2=\"{RIGHT_X}\" y2=\"{}\"><title>{} → {}</title></line>\n",
                    LEFT_X + BOX_W,
                    y(row),
                    y(col_row),
                    escape(name),
                    escape(&col.name)
                ));
            }
        }
    }
    for (row, name) in inputs.iter().enumerate() {
        let label = node(LEFT_X, y(row), "input", name);
        let dataset = name.rsplit_once('.').map_or(*name, |(d, _)| d);
        match href(dataset) {
            Some(link) => out.push_str(&format!("<a href=\"{}\">{label}</a>\n", escape(&link))),
            None => out.push_str(&format!("{label}\n")),
        }
    }
    for (row, col) in columns.iter().enumerate() {
        out.push_str(&node(RIGHT_X, y(row), "output", &col.name));
        out.push('\n');
    }
    out.push_str("</svg>\n");
    out
}

fn node(x: usize, cy: usize, class: &str, label: &str) -> String {
    format!(
        "<g class=\"{class}\"><rect x=\"{x}\" y=\"{}\" width=\"{BOX_W}\" height=\"{}\" rx=\"4\"></rect><text x=\"{}\" y=\"{}\">{}</text></g>",
        cy - ROW / 2 + 2,
        ROW - 4,
        x + 6,
        cy + 4,
        escape(label)
    )
}
