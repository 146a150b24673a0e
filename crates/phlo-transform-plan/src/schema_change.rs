//! Schema changes (SPEC §49–51): a model's inferred columns against the columns recorded
//! with its last materialisation, as `+ added`, `~ type change`, `- removed` and named
//! renames, each classified SAFE / REVIEW / BREAKING under the `[schema]` policy, with the
//! downstream models a removal or change reaches — computed at plan time, before any data
//! changes.

use datafusion::arrow::datatypes::DataType;
use phlo_transform_compiler::lineage::{column_id, dataset_id, EdgeKind};
use phlo_transform_compiler::{Column, Compilation};
use phlo_transform_project::config::SchemaPolicy;
use phlo_transform_sql::sqlparser::ast::{SelectItem, SetExpr};
use phlo_transform_state::MaterializedVersion;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::str::FromStr;

pub use phlo_transform_state::RecordedColumn;

/// A column of the inferred schema, as it would be recorded.
pub fn recorded(c: &Column) -> RecordedColumn {
    RecordedColumn {
        name: c.name.clone(),
        data_type: c.data_type.clone(),
        nullable: c.nullable,
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Severity {
    Safe,
    Review,
    Breaking,
}

impl Severity {
    pub fn label(self) -> &'static str {
        match self {
            Severity::Safe => "SAFE",
            Severity::Review => "REVIEW",
            Severity::Breaking => "BREAKING",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    Added,
    Removed,
    TypeChanged,
    NullabilityChanged,
    Renamed,
}

impl ChangeKind {
    /// `+`, `-`, `~`, `>` as plan prints them.
    pub fn sign(self) -> char {
        match self {
            ChangeKind::Added => '+',
            ChangeKind::Removed => '-',
            ChangeKind::TypeChanged | ChangeKind::NullabilityChanged => '~',
            ChangeKind::Renamed => '>',
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ColumnChange {
    pub kind: ChangeKind,
    pub column: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub previous_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to_type: Option<String>,
    pub severity: Severity,
    /// Why this severity (`nullable addition`, `numeric widening`, …).
    pub rule: String,
}

/// How a downstream model depends on a changed column.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Reference {
    /// The model names the column; `line` is where (1-based, in the model file).
    Direct { column: String, line: Option<usize> },
    /// The model reads the changed model with `SELECT *`: its own columns change too.
    Star,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AffectedModel {
    pub model: String,
    pub path: String,
    pub references: Vec<Reference>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SchemaChange {
    pub model: String,
    pub severity: Severity,
    pub changes: Vec<ColumnChange>,
    pub downstream: Vec<AffectedModel>,
}

/// The schema changes of every model whose inferred columns differ from the columns recorded
/// with its materialisation in `materialized` (by model id), with their downstream impact.
/// Models without a recorded or a known schema have none. Works on a compilation with errors
/// too: a reader the change broke is reported from its own error.
pub fn schema_changes(
    c: &Compilation,
    materialized: &HashMap<String, MaterializedVersion>,
    policy: &SchemaPolicy,
) -> Vec<SchemaChange> {
    let mut out = Vec::new();
    for &i in &c.order {
        let m = &c.models[i];
        let (Some(recorded_columns), Some(columns)) = (
            materialized
                .get(&m.id)
                .and_then(|r| r.output_columns.as_ref()),
            m.schema.as_ref().and_then(|s| s.columns()),
        ) else {
            continue;
        };
        let after: Vec<RecordedColumn> = columns.iter().map(recorded).collect();
        let renames = c
            .contracts
            .get(&i)
            .map(|k| k.renames.clone())
            .unwrap_or_default();
        let changes = classify(recorded_columns, &after, &renames, policy);
        let Some(severity) = changes.iter().map(|ch| ch.severity).max() else {
            continue;
        };
        let touched: Vec<&str> = changes
            .iter()
            .filter(|ch| ch.severity > Severity::Safe)
            .flat_map(|ch| {
                let old = match ch.kind {
                    ChangeKind::Renamed => ch.previous_name.as_deref(),
                    _ => None,
                };
                old.into_iter()
                    .chain((ch.kind != ChangeKind::Added).then_some(ch.column.as_str()))
            })
            .collect();
        let downstream = if touched.is_empty() {
            Vec::new()
        } else {
            downstream_impact(c, i, &touched)
        };
        out.push(SchemaChange {
            model: m.name.to_string(),
            severity,
            changes,
            downstream,
        });
    }
    out
}

/// With `[schema] breaking_changes = "error"`: the error (L011) that rejects a plan with a
/// BREAKING change, naming each change and the models it reaches.
pub fn breaking_error(changes: &[SchemaChange]) -> Option<phlo_transform_core::Diagnostic> {
    let breaking: Vec<String> = changes
        .iter()
        .flat_map(|s| {
            s.changes
                .iter()
                .filter(|ch| ch.severity == Severity::Breaking)
                .map(move |ch| format!("{}.{} ({})", s.model, ch.column, ch.rule))
        })
        .collect();
    if breaking.is_empty() {
        return None;
    }
    let mut d = phlo_transform_core::Diagnostic::error(
        phlo_transform_core::diagnostic::codes::BREAKING_SCHEMA_CHANGE,
        format!("breaking schema change: {}", breaking.join(", ")),
    )
    .with_help("update the downstream models, declare a rename in [model.\"…\"].renames, or set [schema] breaking_changes = \"warn\" to accept it");
    for s in changes {
        for a in &s.downstream {
            d = d.with_note(format!(
                "{} reads {}: {}",
                a.model,
                s.model,
                describe_references(&a.references)
            ));
        }
    }
    Some(d)
}

/// `direct reference to x at line 18, SELECT * dependency`.
pub fn describe_references(references: &[Reference]) -> String {
    references
        .iter()
        .map(|r| match r {
            Reference::Direct {
                column,
                line: Some(l),
            } => {
                format!("direct reference to {column} at line {l}")
            }
            Reference::Direct { column, line: None } => format!("direct reference to {column}"),
            Reference::Star => "SELECT * dependency".to_string(),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Compares the recorded columns with the inferred ones. `renames` maps new name → old name
/// (the contract's `renames` table).
pub fn classify(
    before: &[RecordedColumn],
    after: &[RecordedColumn],
    renames: &BTreeMap<String, String>,
    policy: &SchemaPolicy,
) -> Vec<ColumnChange> {
    let old: BTreeMap<&str, &RecordedColumn> =
        before.iter().map(|c| (c.name.as_str(), c)).collect();
    let new: BTreeSet<&str> = after.iter().map(|c| c.name.as_str()).collect();
    let renamed_from: BTreeSet<&str> = renames
        .iter()
        .filter(|(n, o)| new.contains(n.as_str()) && old.contains_key(o.as_str()))
        .map(|(_, o)| o.as_str())
        .collect();
    let mut changes = Vec::new();
    for c in after {
        let previous = match renames
            .get(&c.name)
            .filter(|o| renamed_from.contains(o.as_str()))
        {
            Some(o) => {
                changes.push(ColumnChange {
                    kind: ChangeKind::Renamed,
                    column: c.name.clone(),
                    previous_name: Some(o.clone()),
                    from_type: None,
                    to_type: None,
                    severity: Severity::Review,
                    rule: "declared rename: readers of the old name must follow".into(),
                });
                old.get(o.as_str()).copied()
            }
            None => old.get(c.name.as_str()).copied(),
        };
        match previous {
            None => {
                let (severity, rule) = if !c.nullable {
                    (
                        Severity::Review,
                        "NOT NULL addition: existing rows need a value",
                    )
                } else if policy.allow_nullable_additions {
                    (Severity::Safe, "nullable addition")
                } else {
                    (
                        Severity::Review,
                        "nullable addition ([schema] allow_nullable_additions = false)",
                    )
                };
                changes.push(change(
                    ChangeKind::Added,
                    c,
                    None,
                    Some(&c.data_type),
                    severity,
                    rule,
                ));
            }
            Some(p) => {
                if p.data_type != c.data_type {
                    let (severity, rule) = type_change(&p.data_type, &c.data_type, policy);
                    changes.push(change(
                        ChangeKind::TypeChanged,
                        c,
                        Some(&p.data_type),
                        Some(&c.data_type),
                        severity,
                        rule,
                    ));
                }
                if p.nullable != c.nullable {
                    let (severity, rule) = if c.nullable {
                        (Severity::Review, "NOT NULL dropped: readers may rely on it")
                    } else {
                        (Severity::Safe, "now proven NOT NULL")
                    };
                    changes.push(change(
                        ChangeKind::NullabilityChanged,
                        c,
                        None,
                        None,
                        severity,
                        rule,
                    ));
                }
            }
        }
    }
    for p in before {
        if !new.contains(p.name.as_str()) && !renamed_from.contains(p.name.as_str()) {
            changes.push(ColumnChange {
                kind: ChangeKind::Removed,
                column: p.name.clone(),
                previous_name: None,
                from_type: Some(p.data_type.clone()),
                to_type: None,
                severity: Severity::Breaking,
                rule: "removed column".into(),
            });
        }
    }
    changes
}

fn change(
    kind: ChangeKind,
    c: &RecordedColumn,
    from: Option<&String>,
    to: Option<&String>,
    severity: Severity,
    rule: &str,
) -> ColumnChange {
    ColumnChange {
        kind,
        column: c.name.clone(),
        previous_name: None,
        from_type: from.cloned(),
        to_type: to.cloned(),
        severity,
        rule: rule.to_string(),
    }
}

/// Classifies a type change by the Arrow types both names parse to.
fn type_change(from: &str, to: &str, policy: &SchemaPolicy) -> (Severity, &'static str) {
    let (Ok(a), Ok(b)) = (DataType::from_str(from), DataType::from_str(to)) else {
        return (Severity::Breaking, "type change");
    };
    if same_representation(&a, &b) {
        return (Severity::Safe, "same values, another physical encoding");
    }
    if widens(&a, &b) {
        return if policy.allow_numeric_widening {
            (Severity::Review, "numeric widening")
        } else {
            (
                Severity::Breaking,
                "numeric widening ([schema] allow_numeric_widening = false)",
            )
        };
    }
    (Severity::Breaking, "incompatible type change")
}

fn same_representation(a: &DataType, b: &DataType) -> bool {
    use DataType::*;
    let text = |t: &DataType| matches!(t, Utf8 | LargeUtf8 | Utf8View);
    let binary = |t: &DataType| matches!(t, Binary | LargeBinary | BinaryView);
    text(a) && text(b) || binary(a) && binary(b)
}

/// True when every value of `a` is exactly representable in `b`.
fn widens(a: &DataType, b: &DataType) -> bool {
    use DataType::*;
    let int_bits = |t: &DataType| match t {
        Int8 => Some((8, true)),
        Int16 => Some((16, true)),
        Int32 => Some((32, true)),
        Int64 => Some((64, true)),
        UInt8 => Some((8, false)),
        UInt16 => Some((16, false)),
        UInt32 => Some((32, false)),
        UInt64 => Some((64, false)),
        _ => None,
    };
    // Integer digits a decimal must hold for an integer type.
    let int_digits = |bits: u32| match bits {
        8 => 3,
        16 => 5,
        32 => 10,
        _ => 20,
    };
    let decimal = |t: &DataType| match t {
        Decimal32(p, s) | Decimal64(p, s) | Decimal128(p, s) | Decimal256(p, s) => {
            Some((*p as i32, *s as i32))
        }
        _ => None,
    };
    match (int_bits(a), int_bits(b)) {
        (Some((x, sx)), Some((y, sy))) => return y > x && (sy || !sx) || y == x && sx == sy,
        (Some((x, _)), None) => {
            return match b {
                Float32 => x <= 16,
                Float64 => x <= 32,
                _ => decimal(b).is_some_and(|(p, s)| p - s >= int_digits(x)),
            }
        }
        _ => {}
    }
    match (a, b) {
        (Float16, Float32 | Float64) | (Float32, Float64) => true,
        _ => match (decimal(a), decimal(b)) {
            (Some((p1, s1)), Some((p2, s2))) => s2 >= s1 && p2 - s2 >= p1 - s1,
            _ => false,
        },
    }
}

/// The downstream models a change of `model`'s columns reaches, with how each depends on
/// them: a direct reference (from the lineage graph, or from the reader's own unknown-column
/// error when the change broke it) with its line, or a `SELECT *` over the model.
pub fn downstream_impact(c: &Compilation, model: usize, columns: &[&str]) -> Vec<AffectedModel> {
    let name = c.models[model].name.as_str();
    let column_nodes: Vec<Option<usize>> = columns
        .iter()
        .map(|col| c.lineage().node(&column_id(name, col)))
        .collect();
    let mut out = Vec::new();
    for reader in c.graph.downstream(model) {
        let m = &c.models[reader];
        let text = &c.workspace.models[reader].text;
        let reader_dataset = dataset_id(m.name.as_str());
        let mut references = Vec::new();
        if reads_with_star(c, reader, model) {
            references.push(Reference::Star);
        }
        for (&col, node) in columns.iter().zip(&column_nodes) {
            let used_in_lineage = node.is_some_and(|n| {
                c.lineage().outgoing(n).any(|e| {
                    e.kind == EdgeKind::Derives
                        && c.lineage().nodes[e.to].dataset.as_deref()
                            == Some(reader_dataset.as_str())
                })
            });
            // A reader the change broke has no lineage; its error names the column.
            let broken_at = c.diagnostics.iter().find(|d| {
                d.file.as_deref() == Some(m.path.as_str())
                    && d.code == phlo_transform_core::diagnostic::codes::UNKNOWN_COLUMN
                    && mentions(&d.message, col)
            });
            if let Some(d) = broken_at {
                references.push(Reference::Direct {
                    column: col.to_string(),
                    line: d.line,
                });
            } else if used_in_lineage && !references.contains(&Reference::Star) {
                references.push(Reference::Direct {
                    column: col.to_string(),
                    line: first_line_naming(text, col),
                });
            }
        }
        if !references.is_empty() {
            out.push(AffectedModel {
                model: m.name.to_string(),
                path: m.path.clone(),
                references,
            });
        }
    }
    out
}

/// Whether `reader`'s query has a `*` or `alias.*` projection item over a FROM that reads
/// `model` (any SELECT of the query, CTEs and subqueries included).
fn reads_with_star(c: &Compilation, reader: usize, model: usize) -> bool {
    let Some(query) = c.models[reader].query() else {
        return false;
    };
    let reads_model = c.models[reader].relations.iter().any(|r| {
        matches!(r.target, Some(phlo_transform_compiler::resolve::Target::Model(i)) if i == model)
    });
    reads_model && has_wildcard(&query.body)
}

fn has_wildcard(body: &SetExpr) -> bool {
    match body {
        SetExpr::Select(s) => s.projection.iter().any(|p| {
            matches!(
                p,
                SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..)
            )
        }),
        SetExpr::Query(q) => has_wildcard(&q.body),
        SetExpr::SetOperation { left, right, .. } => has_wildcard(left) || has_wildcard(right),
        _ => false,
    }
}

fn mentions(message: &str, column: &str) -> bool {
    message
        .split(|ch: char| !(ch.is_alphanumeric() || ch == '_'))
        .any(|w| w.eq_ignore_ascii_case(column))
}

/// The first line of `text` naming `column` as a word (directive comments skipped).
fn first_line_naming(text: &str, column: &str) -> Option<usize> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim_start().starts_with("--"))
        .find(|(_, l)| mentions(l, column))
        .map(|(i, _)| i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn col(name: &str, ty: &str, nullable: bool) -> RecordedColumn {
        RecordedColumn {
            name: name.into(),
            data_type: ty.into(),
            nullable,
        }
    }

    fn kinds(changes: &[ColumnChange]) -> Vec<(ChangeKind, &str, Severity)> {
        changes
            .iter()
            .map(|c| (c.kind, c.column.as_str(), c.severity))
            .collect()
    }

    #[test]
    fn the_spec_example() {
        let before = [
            col("result", "Float32", true),
            col("legacy_result", "Utf8", true),
        ];
        let after = [
            col("result", "Float64", true),
            col("dilution_factor", "Float64", true),
        ];
        let changes = classify(&before, &after, &BTreeMap::new(), &SchemaPolicy::default());
        assert_eq!(
            kinds(&changes),
            [
                (ChangeKind::TypeChanged, "result", Severity::Review),
                (ChangeKind::Added, "dilution_factor", Severity::Safe),
                (ChangeKind::Removed, "legacy_result", Severity::Breaking),
            ]
        );
    }

    #[test]
    fn policy_tightens_additions_and_widening() {
        let policy = SchemaPolicy {
            allow_nullable_additions: false,
            allow_numeric_widening: false,
            ..SchemaPolicy::default()
        };
        let changes = classify(
            &[col("n", "Int32", true)],
            &[col("n", "Int64", true), col("x", "Utf8", true)],
            &BTreeMap::new(),
            &policy,
        );
        assert_eq!(
            kinds(&changes),
            [
                (ChangeKind::TypeChanged, "n", Severity::Breaking),
                (ChangeKind::Added, "x", Severity::Review),
            ]
        );
    }

    #[test]
    fn type_changes() {
        let p = SchemaPolicy::default();
        let sev = |a: &str, b: &str| type_change(a, b, &p).0;
        assert_eq!(sev("Int32", "Int64"), Severity::Review);
        assert_eq!(sev("Int64", "Int32"), Severity::Breaking);
        assert_eq!(sev("UInt32", "Int64"), Severity::Review);
        assert_eq!(sev("Int32", "UInt64"), Severity::Breaking);
        assert_eq!(sev("Int32", "Float64"), Severity::Review);
        assert_eq!(sev("Int64", "Float64"), Severity::Breaking);
        assert_eq!(
            sev("Decimal128(10, 2)", "Decimal128(12, 2)"),
            Severity::Review
        );
        assert_eq!(
            sev("Decimal128(10, 2)", "Decimal128(10, 3)"),
            Severity::Breaking
        );
        assert_eq!(sev("Int32", "Decimal128(12, 2)"), Severity::Review);
        assert_eq!(sev("Utf8", "Utf8View"), Severity::Safe);
        assert_eq!(sev("Utf8", "Int64"), Severity::Breaking);
        assert_eq!(sev("Float64", "Float32"), Severity::Breaking);
    }

    #[test]
    fn declared_renames_and_nullability() {
        let renames = BTreeMap::from([("value".to_string(), "result".to_string())]);
        let changes = classify(
            &[col("result", "Float64", true), col("id", "Int64", false)],
            &[col("value", "Float64", true), col("id", "Int64", true)],
            &renames,
            &SchemaPolicy::default(),
        );
        assert_eq!(
            kinds(&changes),
            [
                (ChangeKind::Renamed, "value", Severity::Review),
                (ChangeKind::NullabilityChanged, "id", Severity::Review),
            ]
        );
        assert_eq!(changes[0].previous_name.as_deref(), Some("result"));
    }

    #[test]
    fn unchanged_schemas_have_no_changes() {
        let cols = [col("a", "Int64", false), col("b", "Utf8", true)];
        assert!(classify(&cols, &cols, &BTreeMap::new(), &SchemaPolicy::default()).is_empty());
    }

    #[test]
    fn lines_naming_a_column() {
        let text = "-- @table uses result\nselect id,\n  result * 2 as r\nfrom x";
        assert_eq!(first_line_naming(text, "result"), Some(3));
        assert_eq!(first_line_naming(text, "missing"), None);
    }
}
