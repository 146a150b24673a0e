//! Hover: what a relation, a column or a model name is, in Markdown.

use phlo_transform_compiler::lineage::Directness;
use phlo_transform_compiler::Compilation;
use std::collections::BTreeSet;
use std::fmt::Write;

use crate::position::{Position, Range};
use crate::symbol::{symbol_at, Dataset, Symbol};

/// The Markdown shown over position `p` of file `rel`, and the range it is about.
pub fn hover(c: &Compilation, rel: &str, p: Position) -> Option<(String, Range)> {
    let (symbol, range) = symbol_at(c, rel, p)?;
    let text = match &symbol {
        Symbol::Dataset(d) => dataset(c, d),
        Symbol::Column { dataset, column } => self::column(c, dataset, column),
    };
    Some((text, range))
}

fn dataset(c: &Compilation, d: &Dataset) -> String {
    let mut out = String::new();
    match d {
        Dataset::Model(i) => {
            let m = &c.models[*i];
            let _ = writeln!(
                out,
                "**model** `{}` · {}\n\n`{}` · {} upstream · {} downstream",
                m.name.as_str(),
                m.materialization.as_str(),
                m.path,
                c.graph.upstream(*i).len() + m.sources.len(),
                c.graph.downstream(*i).len(),
            );
        }
        Dataset::Source(name) => {
            let _ = write!(out, "**source** `{name}`");
            if let Some(s) = c.workspace.sources.iter().find(|s| s.name == *name) {
                let _ = write!(
                    out,
                    " · {}\n\n`{}`",
                    snake(&format!("{:?}", s.format)),
                    s.location
                );
                if let Some(desc) = &s.description {
                    let _ = write!(out, "\n\n{desc}");
                }
            }
            out.push('\n');
        }
    }
    match d.columns(c) {
        Some(cols) => {
            out.push_str("\n| column | type | nullable |\n|---|---|---|\n");
            for (name, ty, nullable) in cols {
                let _ = writeln!(out, "| {name} | {ty} | {} |", yes_no(nullable));
            }
        }
        None => out.push_str("\ncolumns unknown (the model or an input has errors)\n"),
    }
    out
}

fn column(c: &Compilation, d: &Dataset, column: &str) -> String {
    let name = d.name(c);
    let mut out = format!("**column** `{name}.{column}`");
    if let Some((_, ty, nullable)) = d
        .columns(c)
        .and_then(|cols| cols.into_iter().find(|(n, _, _)| n == column))
    {
        let _ = write!(
            out,
            ": `{ty}`, {}",
            if nullable { "nullable" } else { "not null" }
        );
    }
    out.push('\n');
    let Dataset::Model(i) = d else {
        return out;
    };
    let m = &c.models[*i];
    let position = m
        .schema
        .as_ref()
        .and_then(|s| s.columns())
        .and_then(|cols| cols.iter().position(|col| col.name == column));
    let Some(derivations) = position.and_then(|p| m.column_lineage.as_ref().and_then(|l| l.get(p)))
    else {
        return out;
    };
    for (title, directness) in [
        ("direct", Directness::Direct),
        ("indirect", Directness::Indirect),
    ] {
        let inputs: BTreeSet<String> = derivations
            .derivations
            .iter()
            .filter(|d| d.directness == directness)
            .map(|d| {
                let how = snake(&format!("{:?}", d.transformation));
                format!("`{}.{}` ({how})", d.input.dataset, d.input.column)
            })
            .collect();
        if !inputs.is_empty() {
            let list: Vec<String> = inputs.into_iter().collect();
            let _ = write!(out, "\n{title} inputs: {}\n", list.join(", "));
        }
    }
    if !derivations.exact {
        out.push_str("\n(lineage partly unknown)\n");
    }
    out
}

fn yes_no(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

/// `GroupBy` as `group_by`: the words the JSON reports use.
fn snake(debug: &str) -> String {
    let mut out = String::new();
    for (i, ch) in debug.chars().enumerate() {
        if ch.is_uppercase() && i > 0 {
            out.push('_');
        }
        out.extend(ch.to_lowercase());
    }
    out
}
