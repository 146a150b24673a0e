//! An edit of model texts compiled from the previous [`Compilation`] rather than from
//! nothing: the edited models are parsed, resolved and typed again, and below them only their
//! descendants (typed again from the compile cache where their inputs did not change). The
//! rest of the workspace is taken as it was: its texts, resolution, types, versions, tests and
//! diagnostics depend on nothing an edit of another model's body changes.
//!
//! The result is exactly what compiling the edited workspace from nothing gives
//! (crates/phlo-transform-live/tests/equivalence.rs checks it on random edit sequences).
//! Where that cannot be guaranteed cheaply — the edit changes a file's directives, the graph
//! has a cycle, a relation newly unresolved is found elsewhere, a model to type again reads
//! a model with errors or no schema (a relaxed schema is not kept) or has a contract — the edit is
//! refused (`None`) and the caller compiles the whole workspace.

use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;
use phlo_transform_project::directives::Directives;
use phlo_transform_sql::parse::default_dialect;
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::OnceLock;

use super::{compile_model, compute_versions, generated_tests, CompiledEntry, MissingRelations};
use crate::cache::{CacheStats, CompileCache};
use crate::graph::ModelGraph;
use crate::resolve::Resolver;
use crate::tests::{CompiledTest, TestKind};
use crate::typing;
use crate::Compilation;

impl Compilation {
    /// This compilation with the model files `edits` (workspace-relative path, new text)
    /// changed, compiled from this one; `None` when the edit is not one this can compile
    /// exactly (see the module's documentation), or a path is no model of the workspace.
    /// `missing` is asked, as a whole compile asks it, about the relations an edited model
    /// reads that nothing resolves; an answer other than "nothing" refuses the edit.
    pub fn with_edited_texts(
        &self,
        edits: &[(String, String)],
        cache: &CompileCache,
        missing: &mut MissingRelations<'_>,
    ) -> Option<Compilation> {
        if self.diagnostics.iter().any(|d| d.code == codes::CYCLE) {
            return None;
        }
        let mut next = self.clone();
        let edited = next.apply_texts(edits)?;
        if edited.is_empty() {
            return Some(next);
        }
        let mut stats = CacheStats::default();
        let session = cache.session();
        let sql_dialect = default_dialect();
        let resolver = Resolver::new(&next.workspace);
        let compile = |i: usize| {
            let ws = &next.workspace;
            compile_model(i, &ws.models[i], ws, &resolver, &sql_dialect, &session)
        };
        let mut entries: BTreeMap<usize, CompiledEntry> =
            edited.iter().map(|&i| (i, compile(i))).collect();
        let wanted: BTreeSet<Vec<String>> = entries
            .values()
            .filter_map(|e| e.unresolved.as_ref())
            .flat_map(|u| u.missing.iter().cloned())
            .collect();
        if !wanted.is_empty() {
            let (found, diagnostics) = missing(&next.workspace, &wanted);
            if !found.is_empty() || !diagnostics.is_empty() {
                return None;
            }
        }
        if self.looked_up
            && entries
                .iter()
                .any(|(&i, e)| reads(&e.model) != reads(&self.models[i]))
        {
            // What `missing` found or said about the relations this model read may no longer
            // hold: only a whole compile asks it again about every relation.
            return None;
        }
        if entries
            .iter()
            .any(|(&i, e)| e.model.upstream != self.models[i].upstream)
        {
            let edges: Vec<(usize, usize)> = (0..next.models.len())
                .flat_map(|i| {
                    let upstream = match entries.get(&i) {
                        Some(e) => &e.model.upstream,
                        None => &next.models[i].upstream,
                    };
                    upstream.iter().map(move |&u| (u, i))
                })
                .collect();
            next.graph = ModelGraph::new(next.models.len(), edges);
            if !next.graph.cycles().is_empty() {
                return None;
            }
            next.order = next.graph.topological_order();
        }
        let affected = next.descendants(&edited);
        let order: Vec<usize> = next
            .order
            .iter()
            .copied()
            .filter(|i| affected.contains(i))
            .collect();
        for &i in &order {
            if self.contracts.contains_key(&i) {
                return None;
            }
            let upstream = match entries.get(&i) {
                Some(e) => &e.model.upstream,
                None => &next.models[i].upstream,
            };
            if upstream
                .iter()
                .any(|u| !affected.contains(u) && !typed(&next.models[*u]))
            {
                return None;
            }
        }
        for &i in &order {
            entries.entry(i).or_insert_with(|| compile(i));
        }
        drop(resolver);

        let paths: HashSet<String> = order.iter().map(|&i| next.models[i].path.clone()).collect();
        let in_affected = |d: &Diagnostic| d.file.as_ref().is_some_and(|f| paths.contains(f));
        let mut diagnostics = phlo_transform_core::Diagnostics::default();
        diagnostics.extend(
            self.diagnostics
                .iter()
                .filter(|d| !in_affected(d))
                .chain(self.input_diagnostics.iter().filter(|d| in_affected(d)))
                .cloned(),
        );
        let mut canonical: Vec<Option<String>> = vec![None; next.models.len()];
        for (i, entry) in entries {
            let CompiledEntry {
                model,
                diagnostics: diags,
                canonical: text,
                cache_hit,
                ..
            } = entry;
            if cache_hit {
                stats.parse_hits += 1;
            } else {
                stats.parsed.push(i);
            }
            let own_errors = diags.iter().any(Diagnostic::is_error)
                || self
                    .input_diagnostics
                    .iter()
                    .any(|d| d.is_error() && d.file.as_deref() == Some(model.path.as_str()));
            diagnostics.extend(diags);
            canonical[i] = text;
            next.models[i] = std::sync::Arc::new(crate::CompiledModel {
                has_errors: model.has_errors || own_errors,
                ..model
            });
        }

        let typed = typing::infer(
            &mut next.models,
            &order,
            &next.catalog,
            &next.workspace,
            &next.dialect,
            &session,
            &mut diagnostics,
        );
        // The compile cache's writes are kept in memory or the workspace's directory; a
        // shared store's failure is reported by the next whole compile.
        let _ = session.flush();
        stats.type_hits = typed.hits;
        stats.typed = typed.computed;
        crate::contracts::check_directive_columns(
            &next.models,
            &next.workspace,
            order.iter().copied(),
            &mut diagnostics,
        );
        crate::incremental::check_columns(
            &mut next.models,
            &next.workspace,
            order.iter().copied(),
            &mut diagnostics,
        );
        compute_versions(
            &mut next.models,
            canonical,
            &order,
            &next.workspace,
            &next.catalog,
        );
        next.tests = next.regenerated_tests(&affected, &mut diagnostics);
        diagnostics.sort();
        next.diagnostics = diagnostics;
        next.cache_stats = stats;
        next.lineage = OnceLock::new();
        Some(next)
    }

    /// Puts `edits` into the workspace; returns the models whose text changed, or `None`
    /// when a path is no model or its directives (its configuration) change.
    fn apply_texts(&mut self, edits: &[(String, String)]) -> Option<Vec<usize>> {
        let mut edited = BTreeSet::new();
        for (path, text) in edits {
            // As discovery reads a file: a UTF-8 byte order mark is not SQL.
            let text = text.strip_prefix('\u{feff}').unwrap_or(text);
            let i = self.workspace.models.iter().position(|m| m.path == *path)?;
            let file = &mut self.workspace.models[i];
            if file.text == text {
                continue;
            }
            let (directives, diagnostics) = Directives::parse(text, path);
            if directives != file.directives || diagnostics != Directives::parse(&file.text, path).1
            {
                return None;
            }
            file.text = text.to_string();
            edited.insert(i);
        }
        Some(edited.into_iter().collect())
    }

    /// `roots` and every model downstream of them.
    fn descendants(&self, roots: &[usize]) -> HashSet<usize> {
        let mut seen: HashSet<usize> = roots.iter().copied().collect();
        let mut stack = roots.to_vec();
        while let Some(i) = stack.pop() {
            for d in self.graph.downstream(i) {
                if seen.insert(d) {
                    stack.push(d);
                }
            }
        }
        seen
    }

    /// The tests with the generated tests of the `affected` models made again (in the order a
    /// whole compile gives: generated tests by model, then the test files'); their problems go
    /// to `diagnostics`.
    fn regenerated_tests(
        &self,
        affected: &HashSet<usize>,
        diagnostics: &mut phlo_transform_core::Diagnostics,
    ) -> Vec<CompiledTest> {
        let dialect = default_dialect();
        let (mut generated, custom): (Vec<&CompiledTest>, Vec<&CompiledTest>) = self
            .tests
            .iter()
            .partition(|t| !matches!(t.kind, TestKind::Custom { .. }));
        generated.retain(|t| !t.targets.iter().any(|i| affected.contains(i)));
        let mut kept = generated.into_iter().peekable();
        let mut tests = Vec::with_capacity(self.tests.len());
        for i in 0..self.models.len() {
            while let Some(t) = kept.next_if(|t| t.targets.first().is_some_and(|&m| m < i)) {
                tests.push(t.clone());
            }
            if affected.contains(&i) {
                let made =
                    generated_tests(i, &self.models, &self.workspace, &self.contracts, &dialect);
                for result in made {
                    match result {
                        Ok(test) => tests.push(test),
                        Err(d) => diagnostics.push(d),
                    }
                }
            }
        }
        tests.extend(kept.cloned());
        tests.extend(custom.into_iter().cloned());
        tests
    }
}

/// The relations a model reads and what each resolved to, in the order written.
fn reads(m: &crate::CompiledModel) -> Vec<(&[String], Option<&crate::resolve::Target>)> {
    m.relations
        .iter()
        .map(|r| (r.relation.parts.as_slice(), r.target.as_ref()))
        .collect()
}

/// Whether a model kept what typing it gave: a model with errors, or without a schema (it was
/// typed against a relaxed upstream), may have registered a relaxed schema for its readers.
fn typed(m: &crate::CompiledModel) -> bool {
    !m.has_errors && m.schema.is_some()
}
