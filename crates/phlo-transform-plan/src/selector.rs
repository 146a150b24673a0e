//! The selector language (SPEC §82), shared by plan, apply, run, test, list, lineage and impact.
//!
//! A term is `+? body +?`; bodies are `tag:`, `namespace:`, `source:`, `changed`, `all`/`*`, or
//! a name pattern (exact name, `model://` URI, glob, unique suffix). Include terms union,
//! `--tag`/`--workflow` intersect the matches, `+` and `--upstream`/`--downstream` expand them,
//! and `--exclude` terms subtract last and absolutely. Models the selection reads but does not
//! contain are its *dependencies* (`required`): the planner builds them only when missing.

use globset::{GlobBuilder, GlobMatcher};
use phlo_transform_compiler::{Compilation, ModelLookup};
use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::{did_you_mean, Diagnostic, ModelName};
use phlo_transform_project::Materialization;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

use crate::git::{self, GitChanges};

/// What was asked for, as the CLI flags give it. Stored in the plan so `apply` can replan the
/// same selection.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SelectorSpec {
    /// Include terms (positional, `--select`, `changed` for `--changed`); none means `all`
    /// (or `changed` under `--since`).
    pub include: Vec<String>,
    pub exclude: Vec<String>,
    /// Every tag must be carried.
    pub tags: Vec<String>,
    /// Models of any of these workflows (`workflows/<name>/…`).
    pub workflows: Vec<String>,
    pub upstream: bool,
    pub downstream: bool,
    /// `changed` resolves against merge-base(ref, HEAD) instead of recorded state.
    pub since: Option<String>,
    /// Build selected models even when unchanged (planning only).
    pub force: bool,
}

impl SelectorSpec {
    /// True when resolving needs the recorded state: a `changed` term without `--since`.
    pub fn reads_state(&self) -> bool {
        self.since.is_none()
            && self
                .include
                .iter()
                .any(|t| t.trim().trim_matches('+') == "changed")
    }
}

/// How a model belongs to a selection.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Membership {
    /// Matched by an include term (after the `--tag`/`--workflow` filters).
    #[default]
    Selected,
    /// Added by `+` or `--upstream`/`--downstream`.
    Expanded,
    /// Read by the selection but outside it: must exist, built only when missing.
    Dependency,
}

impl Membership {
    /// `selected`, `expanded`, `dependency`, as JSON prints it.
    pub fn label(self) -> &'static str {
        match self {
            Membership::Selected => "selected",
            Membership::Expanded => "expanded",
            Membership::Dependency => "dependency",
        }
    }
}

/// The models one term matched (before expansion and exclusion).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TermMatch {
    pub term: String,
    /// `include` or `exclude`.
    pub role: String,
    pub models: Vec<String>,
}

/// A resolved selection. Name lists are in topological order.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Selection {
    pub spec: SelectorSpec,
    pub terms: Vec<TermMatch>,
    pub matched: Vec<String>,
    pub expanded: Vec<String>,
    pub required: Vec<String>,
    pub excluded: Vec<String>,
    /// What `--since` compared (SPEC §82 plan.git).
    pub git: Option<GitChanges>,
    /// Membership by model index; excluded models the selection reads are `Dependency` too.
    #[serde(skip)]
    members: Vec<Option<Membership>>,
    #[serde(skip)]
    excluded_ix: BTreeSet<usize>,
}

impl Selection {
    pub fn membership(&self, model: usize) -> Option<Membership> {
        self.members.get(model).copied().flatten()
    }

    pub fn is_excluded(&self, model: usize) -> bool {
        self.excluded_ix.contains(&model)
    }

    /// Selected and expanded models (what the command acts on), by index.
    pub fn acted_on(&self) -> impl Iterator<Item = usize> + '_ {
        self.members.iter().enumerate().filter_map(|(i, m)| {
            matches!(m, Some(Membership::Selected | Membership::Expanded)).then_some(i)
        })
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Body {
    Tag(String),
    Namespace(String),
    Source(String),
    Changed,
    All,
    Pattern(String),
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Term {
    text: String,
    upstream: bool,
    downstream: bool,
    body: Body,
}

fn invalid(term: &str, why: &str) -> Diagnostic {
    Diagnostic::error(
        codes::INVALID_SELECTOR,
        format!("invalid selector `{term}`: {why}"),
    )
    .with_help("a term is `+? body +?` with body tag:x, namespace:x, source:x, changed, all, a model name, `model://` URI, glob or unique suffix")
}

fn parse_term(text: &str) -> Result<Term, Diagnostic> {
    let trimmed = text.trim();
    let (upstream, rest) = match trimmed.strip_prefix('+') {
        Some(r) => (true, r),
        None => (false, trimmed),
    };
    let (downstream, body) = match rest.strip_suffix('+') {
        Some(r) => (true, r),
        None => (false, rest),
    };
    if body.is_empty() {
        return Err(invalid(text, "the selector is empty"));
    }
    if body.starts_with('+') || body.ends_with('+') {
        return Err(invalid(text, "a term takes at most one `+` on each side"));
    }
    let body = match body.split_once(':') {
        Some(("tag", v)) => Body::Tag(v.to_string()),
        Some(("namespace", v)) => Body::Namespace(v.to_lowercase()),
        Some(("source", v)) => Body::Source(v.to_lowercase()),
        Some(("model", _)) => Body::Pattern(ModelName::parse(&body.to_lowercase()).to_string()),
        Some((kind, _)) => {
            return Err(invalid(
                text,
                &format!(
                "unknown selector kind `{kind}:` (expected tag:, namespace:, source: or model://)"
            ),
            ))
        }
        None if body == "changed" => Body::Changed,
        None if body == "all" || body == "*" => Body::All,
        None => Body::Pattern(body.to_lowercase()),
    };
    if let Body::Tag(v) | Body::Namespace(v) | Body::Source(v) | Body::Pattern(v) = &body {
        if v.is_empty() {
            return Err(invalid(text, "the value after the colon is empty"));
        }
    }
    Ok(Term {
        text: trimmed.to_string(),
        upstream,
        downstream,
        body,
    })
}

/// A selector pattern as a glob over names: `*` matches any run of characters (dots
/// included), `?` one character, every other character itself. Brackets, braces and `/`,
/// which globset reads as classes, alternatives and path separators, are escaped: no name
/// contains them (names are ASCII letters, digits, `_` and dots), so a pattern with one
/// matches nothing, as it always has.
fn name_glob(pattern: &str) -> Option<GlobMatcher> {
    let mut escaped = String::with_capacity(pattern.len());
    for c in pattern.chars() {
        if matches!(c, '[' | ']' | '{' | '}' | '/') {
            escaped.extend(['[', c, ']']);
        } else {
            escaped.push(c);
        }
    }
    let glob = GlobBuilder::new(&escaped)
        .literal_separator(false)
        .backslash_escape(false)
        .build()
        .ok()?;
    Some(glob.compile_matcher())
}

/// Whether `glob` (from [`name_glob`]) matches `name`.
fn glob_matches(glob: &Option<GlobMatcher>, name: &str) -> bool {
    glob.as_ref().is_some_and(|g| g.is_match(name))
}

fn is_glob(v: &str) -> bool {
    v.contains('*') || v.contains('?')
}

/// The workflow a model file belongs to: `workflows/<name>/…`.
fn workflow_of(path: &str) -> Option<&str> {
    path.strip_prefix("workflows/")?.split('/').next()
}

fn unmatched(term: &str, what: &str, suggestions: Vec<String>, help: &str) -> Diagnostic {
    Diagnostic::error(
        codes::UNMATCHED_SELECTOR,
        format!("selector `{term}` matches no {what}"),
    )
    .with_suggestions(suggestions)
    .with_help(help.to_string())
}

/// Resolution state shared by the terms of one selection.
struct Resolver<'a> {
    c: &'a Compilation,
    since: Option<&'a str>,
    state_changed: &'a dyn Fn() -> BTreeSet<usize>,
    changed: Option<BTreeSet<usize>>,
    git: Option<GitChanges>,
}

impl Resolver<'_> {
    fn names(&self) -> impl Iterator<Item = &str> {
        self.c.models.iter().map(|m| m.name.as_str())
    }

    fn changed(&mut self) -> Result<BTreeSet<usize>, Diagnostic> {
        if self.changed.is_none() {
            let set = match self.since {
                Some(reference) => {
                    let g = git::changes(self.c, reference)?;
                    let set = g.direct.clone();
                    self.git = Some(g);
                    set
                }
                None => (self.state_changed)(),
            };
            self.changed = Some(set);
        }
        Ok(self.changed.clone().unwrap_or_default())
    }

    fn body(&mut self, term: &Term) -> Result<BTreeSet<usize>, Diagnostic> {
        let c = self.c;
        let all = 0..c.models.len();
        let found: BTreeSet<usize> = match &term.body {
            Body::All => all.collect(),
            Body::Changed => return self.changed(),
            Body::Tag(tag) => all
                .filter(|&i| c.config(i).tags.value.contains(tag))
                .collect(),
            Body::Namespace(ns) => all
                .filter(|&i| c.models[i].name.namespace() == ns)
                .collect(),
            Body::Source(s) => {
                let sources: Vec<&str> = c
                    .workspace
                    .sources
                    .iter()
                    .map(|d| d.name.as_str())
                    .collect();
                let glob = name_glob(s);
                let hit = |name: &str| {
                    name == s || name.starts_with(&format!("{s}.")) || glob_matches(&glob, name)
                };
                if !sources.iter().any(|n| hit(n)) {
                    let namespaces: BTreeSet<&str> = sources
                        .iter()
                        .map(|n| n.split('.').next().unwrap_or(n))
                        .collect();
                    return Err(unmatched(
                        &term.text,
                        "source",
                        did_you_mean(s, sources.iter().copied().chain(namespaces)),
                        "name a source (`lims.results`) or a source namespace (`lims`)",
                    ));
                }
                all.filter(|&i| c.models[i].sources.iter().any(|n| hit(n)))
                    .collect()
            }
            Body::Pattern(p) if is_glob(p) => {
                let glob = name_glob(p);
                all.filter(|&i| glob_matches(&glob, c.models[i].name.as_str()))
                    .collect()
            }
            Body::Pattern(p) => match c.lookup_model(p) {
                ModelLookup::Found(i) => BTreeSet::from([i]),
                ModelLookup::Missing => BTreeSet::new(),
                ModelLookup::Ambiguous(hits) => {
                    let candidates: Vec<String> =
                        hits.iter().map(|&i| c.models[i].name.to_string()).collect();
                    return Err(Diagnostic::error(
                        codes::AMBIGUOUS_SELECTOR,
                        format!(
                            "selector `{}` is ambiguous: {} models end with `{p}`",
                            term.text,
                            hits.len()
                        ),
                    )
                    .with_note(format!("candidates: {}", candidates.join(", ")))
                    .with_suggestions(candidates)
                    .with_help("write more of the name, e.g. one of the candidates"));
                }
            },
        };
        if found.is_empty() {
            let (what, suggestions, help) = match &term.body {
                Body::Tag(t) => {
                    let tags: BTreeSet<&str> = (0..c.models.len())
                        .flat_map(|i| c.config(i).tags.value.iter().map(String::as_str))
                        .collect();
                    (
                        "model tagged this way",
                        did_you_mean(t, tags),
                        "tags come from @tags directives and transform.toml `tags`",
                    )
                }
                Body::Namespace(ns) => {
                    let namespaces: BTreeSet<&str> = self
                        .names()
                        .map(|n| n.split('.').next().unwrap_or(n))
                        .collect();
                    (
                        "namespace",
                        did_you_mean(ns, namespaces),
                        "a namespace is the first segment of a model name",
                    )
                }
                Body::Source(_) => (
                    "model reading that source",
                    Vec::new(),
                    "no model reads the source directly",
                ),
                Body::Pattern(p) => (
                    "model",
                    did_you_mean(p, self.names()),
                    "`phlo-transform list` shows every model",
                ),
                Body::All | Body::Changed => return Ok(found),
            };
            return Err(unmatched(&term.text, what, suggestions, help));
        }
        Ok(found)
    }
}

/// Every transitive upstream (`up`) or downstream model of `from`, `from` excluded.
pub fn closure(c: &Compilation, from: &BTreeSet<usize>, up: bool) -> BTreeSet<usize> {
    let mut out = BTreeSet::new();
    let mut stack: Vec<usize> = from.iter().copied().collect();
    while let Some(i) = stack.pop() {
        let next = if up {
            c.models[i].upstream.clone()
        } else {
            c.graph.downstream(i)
        };
        for n in next {
            if out.insert(n) {
                stack.push(n);
            }
        }
    }
    out.retain(|i| !from.contains(i));
    out
}

fn tag_filter(c: &Compilation, spec: &SelectorSpec) -> Result<BTreeSet<usize>, Vec<Diagnostic>> {
    let mut errors = Vec::new();
    let mut keep: BTreeSet<usize> = (0..c.models.len()).collect();
    for tag in &spec.tags {
        let hits: BTreeSet<usize> = keep
            .iter()
            .copied()
            .filter(|&i| c.config(i).tags.value.contains(tag))
            .collect();
        if hits.is_empty() {
            let tags: BTreeSet<&str> = (0..c.models.len())
                .flat_map(|i| c.config(i).tags.value.iter().map(String::as_str))
                .collect();
            errors.push(unmatched(
                &format!("--tag {tag}"),
                "model",
                did_you_mean(tag, tags),
                "tags come from @tags directives and transform.toml `tags`",
            ));
        }
        keep = hits;
    }
    if !spec.workflows.is_empty() {
        let known: BTreeSet<&str> = c
            .models
            .iter()
            .filter_map(|m| workflow_of(&m.path))
            .collect();
        for w in spec
            .workflows
            .iter()
            .filter(|w| !known.contains(w.as_str()))
        {
            errors.push(unmatched(
                &format!("--workflow {w}"),
                "workflow",
                did_you_mean(w, known.iter().copied()),
                "a workflow's models live under workflows/<name>/transforms/",
            ));
        }
        keep.retain(|&i| {
            workflow_of(&c.models[i].path).is_some_and(|w| spec.workflows.iter().any(|x| x == w))
        });
    }
    if errors.is_empty() {
        Ok(keep)
    } else {
        Err(errors)
    }
}

/// Resolves `spec` against the compiled workspace. `state_changed` answers the state-derived
/// `changed` term (see [`crate::changed_models`]) and is only called when a term needs it;
/// under `--since` the Git provider answers instead. Every problem is reported at once.
pub fn select(
    c: &Compilation,
    spec: &SelectorSpec,
    state_changed: &dyn Fn() -> BTreeSet<usize>,
) -> Result<Selection, Vec<Diagnostic>> {
    let mut errors = Vec::new();
    let implied = if spec.since.is_some() {
        "changed"
    } else {
        "all"
    };
    let include_text: Vec<String> = if spec.include.is_empty() {
        vec![implied.to_string()]
    } else {
        spec.include.clone()
    };
    let parse_all = |texts: &[String], errors: &mut Vec<Diagnostic>| -> Vec<Term> {
        texts
            .iter()
            .filter_map(|t| parse_term(t).map_err(|d| errors.push(d)).ok())
            .collect()
    };
    let include = parse_all(&include_text, &mut errors);
    let exclude = parse_all(&spec.exclude, &mut errors);
    if let Some(r) = &spec.since {
        if errors.is_empty() && !include.iter().any(|t| t.body == Body::Changed) {
            errors.push(
                invalid(
                    &format!("--since {r}"),
                    "it needs a `changed` term among the selectors",
                )
                .with_help("add `changed` (or `changed+`) to the selectors, or drop --since"),
            );
        }
    }
    let filter = tag_filter(c, spec).unwrap_or_else(|e| {
        errors.extend(e);
        BTreeSet::new()
    });
    if !errors.is_empty() {
        return Err(errors);
    }
    let mut r = Resolver {
        c,
        since: spec.since.as_deref(),
        state_changed,
        changed: None,
        git: None,
    };
    let mut terms = Vec::new();
    let (mut matched, mut widened) = (BTreeSet::new(), BTreeSet::new());
    let mut resolve =
        |r: &mut Resolver, t: &Term, role: &str, filtered: bool| -> Option<BTreeSet<usize>> {
            let mut hits = r.body(t).map_err(|d| errors.push(d)).ok()?;
            if filtered {
                hits.retain(|i| filter.contains(i));
            }
            terms.push(TermMatch {
                term: t.text.clone(),
                role: role.to_string(),
                models: order(c, &hits),
            });
            Some(hits)
        };
    for t in &include {
        let Some(hits) = resolve(&mut r, t, "include", true) else {
            continue;
        };
        if t.upstream || spec.upstream {
            widened.extend(closure(c, &hits, true));
        }
        if t.downstream || spec.downstream {
            widened.extend(closure(c, &hits, false));
        }
        matched.extend(hits);
    }
    let mut excluded = BTreeSet::new();
    for t in &exclude {
        let Some(hits) = resolve(&mut r, t, "exclude", false) else {
            continue;
        };
        for (flag, up) in [(t.upstream, true), (t.downstream, false)] {
            if flag {
                excluded.extend(closure(c, &hits, up));
            }
        }
        excluded.extend(hits);
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    matched.retain(|i| !excluded.contains(i));
    widened.retain(|i| !matched.contains(i) && !excluded.contains(i));
    let acted: BTreeSet<usize> = matched.union(&widened).copied().collect();
    let only_changed = include.iter().all(|t| t.body == Body::Changed);
    if acted.is_empty() && !only_changed {
        let mut d = Diagnostic::error(codes::EMPTY_SELECTION, "the selection is empty").with_help(
            "every matched model was filtered out or excluded; loosen --tag/--workflow/--exclude",
        );
        for t in &terms {
            d = d.with_note(format!(
                "{} `{}` matched {}",
                t.role,
                t.term,
                t.models.len()
            ));
        }
        return Err(vec![d]);
    }
    let mut members = vec![None; c.models.len()];
    for &i in &matched {
        members[i] = Some(Membership::Selected);
    }
    for &i in &widened {
        members[i] = Some(Membership::Expanded);
    }
    // Dependencies: everything the selection reads, stopping at excluded materialised models
    // (they are planned against as they are); excluded ephemeral models are inlined anyway.
    let mut stack: Vec<usize> = acted.iter().copied().collect();
    let mut required = BTreeSet::new();
    while let Some(i) = stack.pop() {
        for &u in &c.models[i].upstream {
            if members[u].is_some() {
                continue;
            }
            members[u] = Some(Membership::Dependency);
            let stop =
                excluded.contains(&u) && c.models[u].materialization != Materialization::Ephemeral;
            if !excluded.contains(&u) {
                required.insert(u);
            }
            if !stop {
                stack.push(u);
            }
        }
    }
    Ok(Selection {
        spec: spec.clone(),
        terms,
        matched: order(c, &matched),
        expanded: order(c, &widened),
        required: order(c, &required),
        excluded: order(c, &excluded),
        git: r.git,
        members,
        excluded_ix: excluded,
    })
}

/// Names of `set` in topological order (models on a cycle last, by name).
fn order(c: &Compilation, set: &BTreeSet<usize>) -> Vec<String> {
    let mut seen = BTreeSet::new();
    c.order
        .iter()
        .chain(set.iter())
        .filter(|i| set.contains(i) && seen.insert(**i))
        .map(|&i| c.models[i].name.to_string())
        .collect()
}

#[cfg(test)]
mod tests;
