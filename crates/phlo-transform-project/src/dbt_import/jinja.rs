//! The Jinja of a dbt SQL file, converted to plain SQL where it has a plain meaning:
//! `{{ ref('x') }}` and `{{ source('s', 't') }}` become the relation's name (through the
//! caller's resolver), `{{ config(...) }}` with literal arguments is handed back as settings
//! and removed, `{# … #}` becomes a `/* … */` comment, `{{ var('x') }}` becomes the value
//! the project's `vars:` give `x` (or the call's default), and `{% if is_incremental() %}…
//! {% endif %}` is dropped (its `{% else %}` branch kept): a phlo-transform incremental
//! model's query defines the whole table, as dbt's full build renders it, and the engine
//! works out what is new. Every other construct (`{% … %}` tags, other expressions) is a
//! problem at its line; the caller leaves the model out.

use std::collections::BTreeMap;
use std::fmt;

/// A literal argument of a call (Jinja's Python-like literals).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Literal {
    Str(String),
    List(Vec<Literal>),
    Bool(bool),
    Number(String),
    None,
    Dict(Vec<(String, Literal)>),
}

impl Literal {
    /// A string, or a list of strings, as a list (`'id'` and `['id']` alike).
    pub fn strings(&self) -> Option<Vec<String>> {
        match self {
            Literal::Str(s) => Some(vec![s.clone()]),
            Literal::List(items) => items
                .iter()
                .map(|i| match i {
                    Literal::Str(s) => Some(s.clone()),
                    _ => None,
                })
                .collect(),
            _ => None,
        }
    }
}

impl fmt::Display for Literal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Literal::Str(s) => write!(f, "'{s}'"),
            Literal::List(items) => {
                let items: Vec<String> = items.iter().map(|i| i.to_string()).collect();
                write!(f, "[{}]", items.join(", "))
            }
            Literal::Bool(b) => write!(f, "{b}"),
            Literal::Number(n) => f.write_str(n),
            Literal::None => f.write_str("none"),
            Literal::Dict(entries) => {
                let items: Vec<String> = entries.iter().map(|(k, v)| format!("{k}: {v}")).collect();
                write!(f, "{{{}}}", items.join(", "))
            }
        }
    }
}

/// One call expression `name(arg, …, key=value, …)`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Call {
    pub name: String,
    pub args: Vec<Literal>,
    pub kwargs: Vec<(String, Literal)>,
}

/// A relation a model reads through Jinja.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Reference {
    /// `ref('x')` (a model or a seed).
    Ref(String),
    /// `source('s', 't')`.
    Source(String, String),
}

impl Reference {
    /// `ref('x')`, `ref('project', 'x')` (`project` must be the project itself) or
    /// `source('s', 't')`; anything else (versions, other packages) is `None`.
    fn of(call: &Call, project: &str) -> Option<Reference> {
        let strings: Option<Vec<&str>> = call
            .args
            .iter()
            .map(|a| match a {
                Literal::Str(s) => Some(s.as_str()),
                _ => None,
            })
            .collect();
        match (
            call.name.as_str(),
            strings?.as_slice(),
            call.kwargs.is_empty(),
        ) {
            ("ref", [name], true) => Some(Reference::Ref(name.to_string())),
            ("ref", [package, name], true) if *package == project => {
                Some(Reference::Ref(name.to_string()))
            }
            ("source", [source, table], true) => {
                Some(Reference::Source(source.to_string(), table.to_string()))
            }
            _ => None,
        }
    }
}

/// A construct that has no plain-SQL meaning, at its 1-based line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Problem {
    pub line: usize,
    pub reason: String,
}

/// A file's text converted: the SQL, the `config(...)` settings, the relations it reads
/// (with their lines) and what could not be converted.
#[derive(Debug, Default)]
pub(crate) struct Converted {
    pub sql: String,
    pub config: Vec<(String, Literal)>,
    pub config_line: usize,
    pub references: Vec<(Reference, usize)>,
    pub problems: Vec<Problem>,
}

fn line_at(text: &str, offset: usize) -> usize {
    text[..offset].matches('\n').count() + 1
}

/// The construct as shown in a report: its text on one line, at most 80 characters.
fn shown(construct: &str) -> String {
    let one_line = construct.split_whitespace().collect::<Vec<_>>().join(" ");
    match one_line.char_indices().nth(80) {
        Some((i, _)) => format!("{}…", &one_line[..i]),
        None => one_line,
    }
}

/// Where the `{% if is_incremental() %}` block opened by the tag ending at `from` goes on:
/// the offset after its `{% else %}` (the branch a full build renders), or after its
/// `{% endif %}`. `None` when it is never closed or has an `{% elif %}`.
fn past_incremental_branch(text: &str, from: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut at = from;
    loop {
        let open = at + text[at..].find("{%")?;
        if let Some(comment) = text[at..].find("{#").map(|i| at + i) {
            if comment < open {
                at = comment + 2 + text[comment + 2..].find("#}")? + 2;
                continue;
            }
        }
        let close = open + 2 + text[open + 2..].find("%}")?;
        let end = close + 2;
        let inner = text[open + 2..close]
            .trim_start_matches(['-', '+'])
            .trim_end_matches(['-', '+'])
            .trim();
        match inner.split_whitespace().next().unwrap_or("") {
            "if" => depth += 1,
            "endif" if depth == 0 => return Some(end),
            "endif" => depth -= 1,
            "else" if depth == 0 => return Some(end),
            "elif" if depth == 0 => return None,
            _ => {}
        }
        at = end;
    }
}

/// How `{{ var(...) }}` renders: the project's value for the name, else the call's default,
/// as Jinja prints it; `Err` says why it has no plain text.
fn render_var(call: &Call, vars: &BTreeMap<String, Literal>) -> Result<String, String> {
    let (name, default) = match (call.args.as_slice(), call.kwargs.is_empty()) {
        ([Literal::Str(name)], true) => (name, None),
        ([Literal::Str(name), default], true) => (name, Some(default)),
        _ => return Err(format!("`var` called with {:?}", call.args)),
    };
    let value = match (vars.get(name), default) {
        (Some(v), _) | (None, Some(v)) => v,
        (None, None) => {
            return Err(format!(
            "var('{name}'): dbt_project.yml has no `vars:` entry `{name}` and the call no default"
        ))
        }
    };
    match value {
        Literal::Str(s) if !s.contains("{{") && !s.contains("{%") => Ok(s.clone()),
        Literal::Number(n) => Ok(n.clone()),
        Literal::Bool(b) => Ok(if *b { "True" } else { "False" }.into()),
        other => Err(format!(
            "var('{name}') is `{other}`, which has no plain SQL text"
        )),
    }
}

/// Converts `text`; `resolve` names the relation a reference reads (an error says why it
/// cannot); `vars` are the project's `vars:`.
pub(crate) fn convert(
    text: &str,
    project: &str,
    vars: &BTreeMap<String, Literal>,
    resolve: &mut dyn FnMut(&Reference) -> Result<String, String>,
) -> Converted {
    let mut out = Converted::default();
    let mut rest = 0;
    while let Some(found) = text[rest..].find('{').map(|i| rest + i) {
        let opener = text.get(found..found + 2).unwrap_or("");
        let closer = match opener {
            "{{" => "}}",
            "{%" => "%}",
            "{#" => "#}",
            _ => {
                out.sql.push_str(&text[rest..=found]);
                rest = found + 1;
                continue;
            }
        };
        out.sql.push_str(&text[rest..found]);
        let line = line_at(text, found);
        let Some(len) = text[found + 2..].find(closer) else {
            out.problems.push(Problem {
                line,
                reason: format!("`{opener}` is never closed"),
            });
            return out;
        };
        let end = found + 2 + len + 2;
        let construct = &text[found..end];
        let inner = text[found + 2..end - 2]
            .trim_start_matches(['-', '+'])
            .trim_end_matches(['-', '+'])
            .trim();
        rest = end;
        match opener {
            "{#" => {
                out.sql.push_str("/* ");
                out.sql.push_str(&inner.replace("*/", "* /"));
                out.sql.push_str(" */");
            }
            "{%" if inner.split_whitespace().collect::<Vec<_>>() == ["if", "is_incremental()"] => {
                match past_incremental_branch(text, rest) {
                    Some(after) => {
                        rest = after;
                        // A block that stood on lines of its own leaves no empty line.
                        let kept = out.sql.trim_end_matches([' ', '\t']).len();
                        if out.sql[..kept].ends_with('\n') || kept == 0 {
                            if text[rest..].starts_with('\n') {
                                out.sql.truncate(kept);
                                rest += 1;
                            } else if text[rest..].starts_with("\r\n") {
                                out.sql.truncate(kept);
                                rest += 2;
                            }
                        }
                    }
                    None => out.problems.push(Problem {
                        line,
                        reason: format!(
                            "Jinja statement `{}` (never closed, or with `{{% elif %}}`)",
                            shown(construct)
                        ),
                    }),
                }
            }
            "{%" => {
                let word = inner.split_whitespace().next().unwrap_or("");
                // The end of a block is listed with its start.
                if !(word.starts_with("end") || word == "else" || word == "elif") {
                    out.problems.push(Problem {
                        line,
                        reason: format!("Jinja statement `{}`", shown(construct)),
                    });
                }
            }
            _ => match parse_call(inner) {
                Some(call) if call.name == "config" && call.args.is_empty() => {
                    out.config.extend(call.kwargs);
                    out.config_line = line;
                    // The line the call stood on alone goes with it.
                    if out.sql.ends_with('\n') || out.sql.is_empty() {
                        if text[rest..].starts_with("\r\n") {
                            rest += 2;
                        } else if text[rest..].starts_with('\n') {
                            rest += 1;
                        }
                    }
                }
                Some(call) if call.name == "var" => match render_var(&call, vars) {
                    Ok(text) => out.sql.push_str(&text),
                    Err(reason) => out.problems.push(Problem { line, reason }),
                },
                Some(call) => match Reference::of(&call, project) {
                    Some(reference) => match resolve(&reference) {
                        Ok(name) => {
                            out.sql.push_str(&name);
                            out.references.push((reference, line));
                        }
                        Err(reason) => out.problems.push(Problem { line, reason }),
                    },
                    None => out.problems.push(Problem {
                        line,
                        reason: format!("Jinja expression `{}`", shown(construct)),
                    }),
                },
                None => out.problems.push(Problem {
                    line,
                    reason: format!("Jinja expression `{}`", shown(construct)),
                }),
            },
        }
    }
    out.sql.push_str(&text[rest..]);
    out
}

/// `name(args…)` with literal arguments, the whole of `text`; `None` for anything else.
pub(crate) fn parse_call(text: &str) -> Option<Call> {
    let mut p = Parser {
        chars: text.chars().collect(),
        at: 0,
    };
    let name = p.identifier()?;
    p.skip_space();
    p.expect('(')?;
    let mut call = Call {
        name,
        args: Vec::new(),
        kwargs: Vec::new(),
    };
    loop {
        p.skip_space();
        if p.eat(')') {
            break;
        }
        let save = p.at;
        match p.identifier() {
            Some(key)
                if {
                    p.skip_space();
                    p.peek() == Some('=')
                } =>
            {
                p.expect('=')?;
                call.kwargs.push((key, p.literal()?));
            }
            _ => {
                p.at = save;
                if !call.kwargs.is_empty() {
                    return None;
                }
                call.args.push(p.literal()?);
            }
        }
        p.skip_space();
        if p.eat(',') {
            continue;
        }
        p.skip_space();
        p.expect(')')?;
        break;
    }
    p.skip_space();
    (p.at == p.chars.len()).then_some(call)
}

struct Parser {
    chars: Vec<char>,
    at: usize,
}

impl Parser {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    fn skip_space(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.at += 1;
        }
    }

    fn eat(&mut self, ch: char) -> bool {
        if self.peek() == Some(ch) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, ch: char) -> Option<()> {
        self.eat(ch).then_some(())
    }

    fn identifier(&mut self) -> Option<String> {
        self.skip_space();
        let start = self.at;
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            self.at += 1;
        }
        let word: String = self.chars[start..self.at].iter().collect();
        (!word.is_empty() && !word.starts_with(|c: char| c.is_ascii_digit())).then_some(word)
    }

    fn literal(&mut self) -> Option<Literal> {
        self.skip_space();
        match self.peek()? {
            quote @ ('\'' | '"') => {
                self.at += 1;
                let mut s = String::new();
                loop {
                    match self.peek()? {
                        '\\' => {
                            self.at += 1;
                            s.push(self.peek()?);
                        }
                        c if c == quote => {
                            self.at += 1;
                            return Some(Literal::Str(s));
                        }
                        c => s.push(c),
                    }
                    self.at += 1;
                }
            }
            '[' => {
                self.at += 1;
                let mut items = Vec::new();
                loop {
                    self.skip_space();
                    if self.eat(']') {
                        return Some(Literal::List(items));
                    }
                    items.push(self.literal()?);
                    self.skip_space();
                    if !self.eat(',') {
                        self.skip_space();
                        self.expect(']')?;
                        return Some(Literal::List(items));
                    }
                }
            }
            '{' => {
                self.at += 1;
                let mut entries = Vec::new();
                loop {
                    self.skip_space();
                    if self.eat('}') {
                        return Some(Literal::Dict(entries));
                    }
                    let Literal::Str(key) = self.literal()? else {
                        return None;
                    };
                    self.skip_space();
                    self.expect(':')?;
                    entries.push((key, self.literal()?));
                    self.skip_space();
                    if !self.eat(',') {
                        self.skip_space();
                        self.expect('}')?;
                        return Some(Literal::Dict(entries));
                    }
                }
            }
            c if c.is_ascii_digit() || c == '-' => {
                let start = self.at;
                self.at += 1;
                while self.peek().is_some_and(|c| c.is_ascii_digit() || c == '.') {
                    self.at += 1;
                }
                Some(Literal::Number(self.chars[start..self.at].iter().collect()))
            }
            _ => match self.identifier()?.as_str() {
                "true" | "True" => Some(Literal::Bool(true)),
                "false" | "False" => Some(Literal::Bool(false)),
                "none" | "None" => Some(Literal::None),
                _ => None,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(r: &Reference) -> Result<String, String> {
        match r {
            Reference::Ref(name) if name == "missing" => Err("no model `missing`".into()),
            Reference::Ref(name) => Ok(format!("shop.{name}")),
            Reference::Source(s, t) => Ok(format!("{s}.{t}")),
        }
    }

    #[test]
    fn refs_sources_config_and_comments_convert() {
        let text = "{{ config(materialized='table', tags=['a', \"b\"], unique_key='id') }}\n\
                    {#- a note -#}\nselect * from {{ ref('orders') }} o\njoin {{source( 'raw' , \"pay\" )}} p on {a}";
        let c = convert(text, "shop", &BTreeMap::new(), &mut resolve);
        assert!(c.problems.is_empty(), "{:?}", c.problems);
        assert_eq!(
            c.sql,
            "/* a note */\nselect * from shop.orders o\njoin raw.pay p on {a}"
        );
        assert_eq!(c.config_line, 1);
        assert_eq!(
            c.config[0],
            ("materialized".into(), Literal::Str("table".into()))
        );
        assert_eq!(
            c.config[1].1.strings().unwrap(),
            vec!["a".to_string(), "b".to_string()]
        );
        assert_eq!(
            c.references,
            vec![
                (Reference::Ref("orders".into()), 3),
                (Reference::Source("raw".into(), "pay".into()), 4)
            ]
        );
    }

    #[test]
    fn other_jinja_is_a_problem_at_its_line() {
        let text = "{% set xs = [1] %}\nselect\n{% for x in xs %}{{ x }},{% endfor %}\n{{ ref('missing') }} {{ ref('dbt_utils', 'y') }}";
        let c = convert(text, "shop", &BTreeMap::new(), &mut resolve);
        let lines: Vec<(usize, &str)> = c
            .problems
            .iter()
            .map(|p| (p.line, p.reason.as_str()))
            .collect();
        assert_eq!(
            lines,
            vec![
                (1, "Jinja statement `{% set xs = [1] %}`"),
                (3, "Jinja statement `{% for x in xs %}`"),
                (3, "Jinja expression `{{ x }}`"),
                (4, "no model `missing`"),
                (4, "Jinja expression `{{ ref('dbt_utils', 'y') }}`"),
            ]
        );
    }

    #[test]
    fn is_incremental_blocks_are_dropped_and_vars_are_their_values() {
        let vars = BTreeMap::from([
            ("limit".to_string(), Literal::Number("10".into())),
            ("col".to_string(), Literal::Str("amount".into())),
            ("list".to_string(), Literal::List(vec![])),
        ]);
        let text = "select {{ var('col') }}, {{ var('missing', 'x') }} from {{ ref('orders') }}\n\
                    {% if is_incremental() %}\n  where ts > (select max(ts) from {{ this }})\n\
                    {% if true %}{% endif %}{# {% endif %} #}\n{% endif %}\n\
                    limit {{ var('limit') }}\n\
                    {%- if is_incremental() -%} a {% else %} b {% endif %}";
        let c = convert(text, "shop", &vars, &mut resolve);
        assert!(c.problems.is_empty(), "{:?}", c.problems);
        assert_eq!(c.sql, "select amount, x from shop.orders\nlimit 10\n b ");
        let c = convert(
            "{{ var('list') }} {{ var('nope') }}\n{% if is_incremental() %}{% elif x %}{% endif %}\n{% if is_incremental() %}",
            "shop",
            &vars,
            &mut resolve,
        );
        let reasons: Vec<(usize, &str)> = c
            .problems
            .iter()
            .map(|p| (p.line, p.reason.as_str()))
            .collect();
        assert_eq!(
            reasons,
            vec![
                (1, "var('list') is `[]`, which has no plain SQL text"),
                (1, "var('nope'): dbt_project.yml has no `vars:` entry `nope` and the call no default"),
                (2, "Jinja statement `{% if is_incremental() %}` (never closed, or with `{% elif %}`)"),
                (3, "Jinja statement `{% if is_incremental() %}` (never closed, or with `{% elif %}`)"),
            ]
        );
    }

    #[test]
    fn calls_and_literals_parse() {
        let call = parse_call("ref('customers')").unwrap();
        assert_eq!(call.args, vec![Literal::Str("customers".into())]);
        assert!(parse_call("ref('a') ~ 'x'").is_none());
        assert!(parse_call("config(a=1, 'positional')").is_none());
        let call = parse_call("config(partition_by={'field': 'day'}, full=True)").unwrap();
        assert_eq!(call.kwargs[0].1.to_string(), "{field: 'day'}");
        assert_eq!(call.kwargs[1].1, Literal::Bool(true));
    }
}
