//! Relation resolution in exactly the order of SPEC §12: exact fully-qualified workspace
//! model, current namespace, current transform root, globally unique workspace model, declared
//! external source, catalogue relation (sources found by convention), failure. Any ambiguity
//! is an error naming the candidates.

use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::{did_you_mean, Diagnostic};
use phlo_transform_project::{SourceOrigin, Workspace};
use phlo_transform_sql::RelationRef;
use std::collections::HashMap;

/// What a relation name resolved to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// Index into `Workspace::models`.
    Model(usize),
    /// Source name.
    Source(String),
}

/// Where the reference is written: a model (its index) or a workspace-level test.
#[derive(Clone, Copy, Debug)]
pub enum Context {
    Model(usize),
    Test,
}

pub struct Resolver<'w> {
    ws: &'w Workspace,
    by_name: HashMap<&'w str, usize>,
    /// Last segment → models ending with it, for suffix matching.
    by_last: HashMap<&'w str, Vec<usize>>,
}

impl<'w> Resolver<'w> {
    pub fn new(ws: &'w Workspace) -> Self {
        let mut by_name = HashMap::with_capacity(ws.models.len());
        let mut by_last: HashMap<&str, Vec<usize>> = HashMap::new();
        for (i, m) in ws.models.iter().enumerate() {
            by_name.insert(m.name.as_str(), i);
            by_last.entry(m.name.last()).or_default().push(i);
        }
        Resolver {
            ws,
            by_name,
            by_last,
        }
    }

    pub fn resolve(
        &self,
        rel: &RelationRef,
        ctx: Context,
        file: &str,
    ) -> Result<Target, Diagnostic> {
        let wanted = rel.dotted();
        let me = match ctx {
            Context::Model(i) => Some(i),
            Context::Test => None,
        };
        let not_me = |i: &usize| Some(*i) != me;
        // 1. exact model name
        if let Some(&i) = self.by_name.get(wanted.as_str()).filter(|i| not_me(i)) {
            return Ok(Target::Model(i));
        }
        if let Some(me) = me {
            let model = &self.ws.models[me];
            // 2. current namespace
            let qualified = format!("{}.{wanted}", model.namespace);
            if let Some(&i) = self.by_name.get(qualified.as_str()).filter(|i| not_me(i)) {
                return Ok(Target::Model(i));
            }
            // 3. current transform root
            let in_root: Vec<usize> = self
                .suffix_matches(&wanted)
                .into_iter()
                .filter(|&i| not_me(&i) && self.ws.models[i].root == model.root)
                .collect();
            if let Some(t) = self.unique(&in_root, &wanted, rel, file)? {
                return Ok(t);
            }
        }
        // 4. globally unique model
        let global: Vec<usize> = self
            .suffix_matches(&wanted)
            .into_iter()
            .filter(not_me)
            .collect();
        if let Some(t) = self.unique(&global, &wanted, rel, file)? {
            return Ok(t);
        }
        // 5. declared source, 6. catalogue relation
        for origin in [SourceOrigin::Declared, SourceOrigin::Convention] {
            if let Some(s) = self
                .ws
                .sources
                .iter()
                .find(|s| s.origin == origin && s.name == wanted)
            {
                return Ok(Target::Source(s.name.clone()));
            }
        }
        // 7. failure
        let names = self
            .ws
            .models
            .iter()
            .map(|m| m.name.as_str())
            .chain(self.ws.sources.iter().map(|s| s.name.as_str()));
        let suggestions = did_you_mean(&wanted, names);
        Err(self
            .located(Diagnostic::error(codes::UNRESOLVED_RELATION, format!("unresolved relation `{wanted}`")), rel, file)
            .with_label("no model or source has this name")
            .with_suggestions(suggestions)
            .with_help(format!(
                "add a model that produces `{wanted}`, declare it as [source.\"{wanted}\"] in phlo.toml, or put its data under sources/"
            )))
    }

    fn suffix_matches(&self, wanted: &str) -> Vec<usize> {
        let last = wanted.rsplit('.').next().unwrap_or(wanted);
        self.by_last
            .get(last)
            .map(|v| {
                v.iter()
                    .copied()
                    .filter(|&i| self.ws.models[i].name.ends_with_segments(wanted))
                    .collect()
            })
            .unwrap_or_default()
    }

    fn unique(
        &self,
        candidates: &[usize],
        wanted: &str,
        rel: &RelationRef,
        file: &str,
    ) -> Result<Option<Target>, Diagnostic> {
        match candidates {
            [] => Ok(None),
            [one] => Ok(Some(Target::Model(*one))),
            many => {
                let mut names: Vec<&str> = many
                    .iter()
                    .map(|&i| self.ws.models[i].name.as_str())
                    .collect();
                names.sort();
                let mut d = self
                    .located(
                        Diagnostic::error(
                            codes::AMBIGUOUS_RELATION,
                            format!("ambiguous relation `{wanted}`"),
                        ),
                        rel,
                        file,
                    )
                    .with_label(format!("{} models match this name", names.len()))
                    .with_help("use a qualified model name");
                d = d.with_note(format!("candidates:\n  {}", names.join("\n  ")));
                d.suggestions = names.iter().map(|s| s.to_string()).collect();
                Err(d)
            }
        }
    }

    fn located(&self, d: Diagnostic, rel: &RelationRef, file: &str) -> Diagnostic {
        let d = d.in_file(file);
        match rel.span {
            Some(span) => d.with_span(span),
            None => d,
        }
    }
}
