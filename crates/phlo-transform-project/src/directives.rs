//! Header directives (`-- @table`, `-- @key id`, …): parsed from the comment lines before the
//! first SQL token, independently of the SQL itself (SPEC §18–19).

use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::{did_you_mean, Diagnostic};
use serde::{Deserialize, Serialize};
use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Materialization {
    View,
    Table,
    Ephemeral,
    Incremental,
}

impl Materialization {
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "view" => Some(Self::View),
            "table" => Some(Self::Table),
            "ephemeral" => Some(Self::Ephemeral),
            "incremental" => Some(Self::Incremental),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::View => "view",
            Self::Table => "table",
            Self::Ephemeral => "ephemeral",
            Self::Incremental => "incremental",
        }
    }
}

impl fmt::Display for Materialization {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How strictly a model is type-checked (SPEC §24): `strict` reports type errors, `baseline`
/// turns errors from constructs DataFusion cannot type into warnings (the model is then
/// `unknown`), `off` does not type the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AnalysisMode {
    Strict,
    Baseline,
    Off,
}

impl AnalysisMode {
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "strict" => Some(Self::Strict),
            "baseline" => Some(Self::Baseline),
            "off" => Some(Self::Off),
            _ => None,
        }
    }
}

impl fmt::Display for AnalysisMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Strict => "strict",
            Self::Baseline => "baseline",
            Self::Off => "off",
        })
    }
}

/// `@incremental <strategy>` (SPEC §27).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(tag = "strategy", rename_all = "lowercase")]
pub enum IncrementalStrategy {
    Append,
    Full,
    Key { columns: Vec<String> },
    Partition { columns: Vec<String> },
    Window { column: String },
}

impl fmt::Display for IncrementalStrategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Append => f.write_str("append"),
            Self::Full => f.write_str("full"),
            Self::Key { columns } => write!(f, "key={}", columns.join(",")),
            Self::Partition { columns } => write!(f, "partition={}", columns.join(",")),
            Self::Window { column } => write!(f, "window={column}"),
        }
    }
}

/// What a table records as the strategy it was built with (Delta property `phlo.strategy`):
/// `table`, `append`, `key=id`, `partition=day`, `window=ts` (`window=ts key=id` when a
/// window model merges on its `@key`), `full`. Another label on an existing table means a
/// full rebuild (SPEC §29).
pub fn strategy_label(incremental: Option<&IncrementalStrategy>, key: &[String]) -> String {
    match incremental {
        None => "table".to_string(),
        Some(s @ IncrementalStrategy::Window { .. }) if !key.is_empty() => {
            format!("{s} key={}", key.join(","))
        }
        Some(s) => s.to_string(),
    }
}

/// A directive value with the 1-based line it was written on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AtLine<T> {
    pub value: T,
    pub line: usize,
}

/// Everything the header of one model file declares.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Directives {
    pub id: Option<AtLine<String>>,
    pub materialized: Option<AtLine<Materialization>>,
    pub incremental: Option<AtLine<IncrementalStrategy>>,
    pub key: Option<AtLine<Vec<String>>>,
    pub not_null: Option<AtLine<Vec<String>>>,
    pub owner: Option<AtLine<String>>,
    pub tags: Option<AtLine<Vec<String>>>,
    pub analysis: Option<AtLine<AnalysisMode>>,
}

const KNOWN: &[&str] = &[
    "id",
    "table",
    "view",
    "ephemeral",
    "incremental",
    "materialized",
    "key",
    "not-null",
    "owner",
    "tags",
    "analysis",
];

impl Directives {
    /// Parses the header of `text`. `file` is used for diagnostics only.
    pub fn parse(text: &str, file: &str) -> (Directives, Vec<Diagnostic>) {
        let mut out = Directives::default();
        let mut diags = Vec::new();
        let mut pending_incremental: Option<(String, usize)> = None;
        for (index, raw) in text.lines().enumerate() {
            let line = index + 1;
            let trimmed = raw.trim();
            if trimmed.is_empty() {
                continue;
            }
            let Some(comment) = trimmed.strip_prefix("--") else {
                break; // first SQL line: the header is over
            };
            let comment = comment.trim();
            let Some(body) = comment.strip_prefix('@') else {
                continue;
            };
            let column = raw.find('@').map(|c| c + 1).unwrap_or(1);
            let (word, args) = match body.split_once(char::is_whitespace) {
                Some((w, a)) => (w, a.trim()),
                None => (body, ""),
            };
            let err =
                |code, msg: String| Diagnostic::error(code, msg).in_file(file).at(line, column);
            let mut set_materialized = |m: Materialization, diags: &mut Vec<Diagnostic>| {
                if let Some(prev) = &out.materialized {
                    if prev.value != m {
                        diags.push(
                            err(
                                codes::CONFLICTING_DIRECTIVES,
                                format!(
                                    "conflicting materialisations: `{}` (line {}) and `{m}`",
                                    prev.value, prev.line
                                ),
                            )
                            .with_help("keep one of @table, @view, @ephemeral, @incremental"),
                        );
                        return;
                    }
                }
                out.materialized = Some(AtLine { value: m, line });
            };
            let no_args = |diags: &mut Vec<Diagnostic>| {
                if !args.is_empty() {
                    diags.push(
                        err(
                            codes::INVALID_DIRECTIVE_ARGUMENT,
                            format!("`@{word}` takes no argument, found `{args}`"),
                        )
                        .with_help(format!("write `-- @{word}` on its own")),
                    );
                }
            };
            let needs_args = |diags: &mut Vec<Diagnostic>, example: &str| -> bool {
                if args.is_empty() {
                    diags.push(
                        err(
                            codes::INVALID_DIRECTIVE_ARGUMENT,
                            format!("`@{word}` needs an argument"),
                        )
                        .with_help(format!("for example `-- @{word} {example}`")),
                    );
                    false
                } else {
                    true
                }
            };
            match word {
                "table" | "view" | "ephemeral" => {
                    no_args(&mut diags);
                    set_materialized(Materialization::parse(word).expect("known"), &mut diags);
                }
                "materialized" | "materialised" => {
                    if word == "materialised" {
                        diags.push(
                            Diagnostic::warning(
                                codes::SPELLING_ALIAS,
                                "`@materialised` is read as `@materialized`",
                            )
                            .in_file(file)
                            .at(line, column)
                            .with_help("spell it `@materialized`, as the documentation does"),
                        );
                    }
                    if needs_args(&mut diags, "table") {
                        match Materialization::parse(args) {
                            Some(m) => set_materialized(m, &mut diags),
                            None => diags.push(
                                err(
                                    codes::INVALID_DIRECTIVE_ARGUMENT,
                                    format!("unknown materialisation `{args}`"),
                                )
                                .with_help("use one of: view, table, ephemeral, incremental"),
                            ),
                        }
                    }
                }
                "analysis" => match AnalysisMode::parse(args) {
                    Some(mode) => out.analysis = Some(AtLine { value: mode, line }),
                    None => diags.push(
                        err(
                            codes::INVALID_DIRECTIVE_ARGUMENT,
                            format!("unknown analysis mode `{args}`"),
                        )
                        .with_help("use `-- @analysis strict`, `baseline` or `off`"),
                    ),
                },
                "incremental" => {
                    set_materialized(Materialization::Incremental, &mut diags);
                    pending_incremental = Some((args.to_string(), line));
                }
                "key" | "not-null" | "tags" => {
                    if needs_args(&mut diags, "experiment_id") {
                        let list = split_list(args);
                        let slot = match word {
                            "key" => &mut out.key,
                            "not-null" => &mut out.not_null,
                            _ => &mut out.tags,
                        };
                        let slot = slot.get_or_insert_with(|| AtLine {
                            value: Vec::new(),
                            line,
                        });
                        // A repeated entry would repeat its tests: reported, kept once.
                        for item in list {
                            if slot.value.contains(&item) {
                                diags.push(
                                    Diagnostic::warning(
                                        codes::INVALID_DIRECTIVE_ARGUMENT,
                                        format!("`{item}` is listed twice in `@{word}`"),
                                    )
                                    .in_file(file)
                                    .at(line, column)
                                    .with_help(format!("list `{item}` once")),
                                );
                            } else {
                                slot.value.push(item);
                            }
                        }
                    }
                }
                "owner" | "id" => {
                    if needs_args(&mut diags, "analytical-development") {
                        let slot = if word == "owner" {
                            &mut out.owner
                        } else {
                            &mut out.id
                        };
                        if let Some(prev) = slot {
                            diags.push(
                                err(
                                    codes::CONFLICTING_DIRECTIVES,
                                    format!("`@{word}` given twice (first on line {})", prev.line),
                                )
                                .with_help(format!("keep one `@{word}` line")),
                            );
                        } else {
                            *slot = Some(AtLine {
                                value: args.to_string(),
                                line,
                            });
                        }
                    }
                }
                other => {
                    let suggestions = did_you_mean(other, KNOWN.iter().copied());
                    diags.push(
                        err(
                            codes::UNKNOWN_DIRECTIVE,
                            format!("unknown directive `@{other}`"),
                        )
                        .with_suggestions(
                            suggestions.into_iter().map(|s| format!("@{s}")).collect(),
                        )
                        .with_help(format!(
                            "known directives: {}",
                            KNOWN
                                .iter()
                                .map(|k| format!("@{k}"))
                                .collect::<Vec<_>>()
                                .join(" ")
                        )),
                    );
                }
            }
        }
        if let Some((args, line)) = pending_incremental {
            match parse_incremental(&args, out.key.as_ref().map(|k| &k.value)) {
                Ok(strategy) => out.incremental = Some(AtLine { value: strategy, line }),
                Err(message) => diags.push(
                    Diagnostic::error(codes::INVALID_DIRECTIVE_ARGUMENT, message)
                        .in_file(file)
                        .at(line, 1)
                        .with_help("use `@incremental append`, `key=<cols>`, `partition=<cols>`, `window=<column>` or `full`"),
                ),
            }
        }
        (out, diags)
    }
}

fn split_list(args: &str) -> Vec<String> {
    args.split([',', ' '])
        .map(|s| s.trim().to_lowercase())
        .filter(|s| !s.is_empty())
        .collect()
}

fn parse_incremental(args: &str, key: Option<&Vec<String>>) -> Result<IncrementalStrategy, String> {
    let args = args.trim();
    if args.is_empty() {
        return match key {
            Some(columns) => Ok(IncrementalStrategy::Key {
                columns: columns.clone(),
            }),
            None => Err("`@incremental` needs a strategy (or an `@key` to merge on)".into()),
        };
    }
    match args.split_once('=') {
        None => match args {
            "append" => Ok(IncrementalStrategy::Append),
            "full" => Ok(IncrementalStrategy::Full),
            other => Err(format!("unknown incremental strategy `{other}`")),
        },
        Some((name, value)) => {
            let columns = split_list(value);
            if columns.is_empty() {
                return Err(format!("`{name}=` needs at least one column"));
            }
            if let Some((_, c)) = columns
                .iter()
                .enumerate()
                .find(|(i, c)| columns[..*i].contains(c))
            {
                return Err(format!(
                    "column `{c}` is listed twice in `{}=`",
                    name.trim()
                ));
            }
            match name.trim() {
                "key" => Ok(IncrementalStrategy::Key { columns }),
                "partition" => Ok(IncrementalStrategy::Partition { columns }),
                "window" if columns.len() == 1 => Ok(IncrementalStrategy::Window {
                    column: columns[0].clone(),
                }),
                "window" => Err("`window=` takes exactly one timestamp column".into()),
                other => Err(format!("unknown incremental strategy `{other}`")),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_header_and_stops_at_sql() {
        let text = "-- @table\n-- @key experiment_id\n-- @not-null sample_id,result\n-- @owner lab\n-- @tags assay, gold\n\nselect 1\n-- @view\n";
        let (d, diags) = Directives::parse(text, "m.sql");
        assert!(diags.is_empty(), "{diags:?}");
        assert_eq!(d.materialized.unwrap().value, Materialization::Table);
        assert_eq!(d.key.unwrap().value, vec!["experiment_id"]);
        assert_eq!(d.not_null.unwrap().value, vec!["sample_id", "result"]);
        assert_eq!(d.owner.unwrap().value, "lab");
        assert_eq!(d.tags.unwrap().value, vec!["assay", "gold"]);
    }

    #[test]
    fn incremental_strategies() {
        let (d, diags) = Directives::parse("-- @incremental key=id\nselect 1", "m.sql");
        assert!(diags.is_empty());
        assert_eq!(
            d.incremental.unwrap().value,
            IncrementalStrategy::Key {
                columns: vec!["id".into()]
            }
        );
        let (d, _) = Directives::parse("-- @key id\n-- @incremental\nselect 1", "m.sql");
        assert_eq!(
            d.incremental.unwrap().value,
            IncrementalStrategy::Key {
                columns: vec!["id".into()]
            }
        );
        let (_, diags) = Directives::parse("-- @incremental sideways\nselect 1", "m.sql");
        assert_eq!(diags[0].code, codes::INVALID_DIRECTIVE_ARGUMENT);
    }

    #[test]
    fn a_repeated_key_column_is_reported_and_kept_once() {
        let (d, diags) = Directives::parse("-- @key id,id\n-- @key ID\nselect 1", "m.sql");
        assert_eq!(d.key.unwrap().value, vec!["id"]);
        assert_eq!(diags.len(), 2, "{diags:?}");
        assert!(diags
            .iter()
            .all(|d| d.code == codes::INVALID_DIRECTIVE_ARGUMENT && d.line.is_some()));
        let (_, diags) = Directives::parse("-- @incremental partition=day,day\nselect 1", "m.sql");
        assert!(diags[0].message.contains("listed twice"), "{diags:?}");
    }

    #[test]
    fn unknown_and_conflicting_directives_are_errors() {
        let (_, diags) = Directives::parse("-- @tabel\nselect 1", "m.sql");
        assert_eq!(diags[0].code, codes::UNKNOWN_DIRECTIVE);
        assert_eq!(diags[0].suggestions, vec!["@table"]);
        assert_eq!((diags[0].line, diags[0].column), (Some(1), Some(4)));
        let (_, diags) = Directives::parse("-- @table\n-- @view\nselect 1", "m.sql");
        assert_eq!(diags[0].code, codes::CONFLICTING_DIRECTIVES);
    }
}
