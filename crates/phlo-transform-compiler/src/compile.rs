//! `Compilation::compile`: parse every model, resolve its relations, build the graph, report
//! cycles, compute versions in topological order and compile tests. Every problem in the
//! workspace is reported in one pass. Parsing and typing take what they can from the compile
//! cache (`cache`), when given one.

use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::{Diagnostic, Diagnostics, ModelName};
use phlo_transform_project::{EffectiveConfig, ModelFile, SourceDecl, Workspace};
use phlo_transform_sql::parse::default_dialect;
use phlo_transform_sql::sqlparser::ast::Query;
use phlo_transform_sql::{extract_relations, parse_query, template, ParsedQuery};
use std::collections::{BTreeMap, BTreeSet};

use crate::cache::{CacheSession, CacheStats, CompileCache};
use crate::catalog::CatalogSnapshot;
use crate::contracts::{self, Contract};
use crate::graph::ModelGraph;
use crate::lineage::{LineageGraph, LineageInputs};
use crate::model::{executable_query, rewrite};
use crate::model::{CompiledModel, Dependency, ModelSchema, ResolvedRelation};
use crate::parsed::Parsed;
use crate::resolve::{Context, Resolver, Target};
use crate::tests::{generated_sql, CompiledTest, TestKind};
use crate::typing;
use crate::version::{Fingerprints, ModelVersion};
use std::sync::{Arc, OnceLock};

mod edit;

/// The immutable result of compiling a workspace.
pub struct Compilation {
    pub workspace: Workspace,
    pub catalog: CatalogSnapshot,
    /// Same order and indices as `workspace.models` (sorted by name).
    pub models: Vec<Arc<CompiledModel>>,
    pub graph: ModelGraph,
    /// Deterministic topological order of the models not caught in a cycle.
    pub order: Vec<usize>,
    pub tests: Vec<CompiledTest>,
    /// Declared contracts by model index.
    pub contracts: BTreeMap<usize, Contract>,
    /// Column-level lineage of the whole workspace, indexed on first use (`lineage()`): a
    /// `check` never needs it, and at 10,000 models it is hundreds of thousands of nodes.
    lineage: OnceLock<LineageGraph>,
    /// The target dialect (`[transform] dialect`; `datafusion` by default).
    pub dialect: crate::dialect::Dialect,
    pub diagnostics: Diagnostics,
    /// What the compile cache answered ([`Compilation::compile_cached`]).
    pub cache_stats: CacheStats,
    /// The diagnostics of what was compiled (loading the workspace and its sources, looking
    /// for missing relations), before any model was: an edit compiled from this compilation
    /// (`with_edited_texts`) keeps those of the files it compiles again.
    input_diagnostics: Diagnostics,
    /// Whether asking for the relations nothing resolved found sources or said anything.
    looked_up: bool,
}

impl Clone for Compilation {
    /// A copy whose column lineage is indexed again on first use.
    fn clone(&self) -> Self {
        Compilation {
            workspace: self.workspace.clone(),
            catalog: self.catalog.clone(),
            models: self.models.clone(),
            graph: self.graph.clone(),
            order: self.order.clone(),
            tests: self.tests.clone(),
            contracts: self.contracts.clone(),
            lineage: OnceLock::new(),
            dialect: self.dialect.clone(),
            diagnostics: self.diagnostics.clone(),
            cache_stats: self.cache_stats.clone(),
            input_diagnostics: self.input_diagnostics.clone(),
            looked_up: self.looked_up,
        }
    }
}

/// What [`Compilation::lookup_model`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ModelLookup {
    Found(usize),
    /// Several models end with the name; their indexes.
    Ambiguous(Vec<usize>),
    Missing,
}

/// Sources for relations nothing in the workspace resolves, found while compiling: given the
/// workspace and the parts of every relation the models and data tests read that no model or
/// source resolves, the sources to add for those of them that exist elsewhere (a warehouse's
/// own tables) and the diagnostics of looking (warnings). Asked once, after parsing and
/// before typing, so that finding them parses nothing again.
pub type MissingRelations<'a> =
    dyn FnMut(&Workspace, &BTreeSet<Vec<String>>) -> (Vec<SourceDecl>, Vec<Diagnostic>) + 'a;

/// A parsed model some of whose relations nothing resolved: kept (only these) until the
/// sources found for them are known, then resolved again without parsing again.
struct Unresolved {
    text: String,
    parsed: Parsed,
    /// The parts of each relation that failed to resolve (R001).
    missing: Vec<Vec<String>>,
}

impl Compilation {
    /// Compiles without the compile cache.
    pub fn compile(
        workspace: Workspace,
        catalog: CatalogSnapshot,
        catalog_diagnostics: Vec<Diagnostic>,
    ) -> Compilation {
        Self::compile_cached(
            workspace,
            catalog,
            catalog_diagnostics,
            &CompileCache::disabled(),
        )
    }

    /// Compiles, taking from `cache` what an earlier compile computed for the same inputs
    /// (parsing by a model's text, typing by its text and its inputs' schemas) and storing
    /// what it computes. The result is the same with or without the cache.
    pub fn compile_cached(
        workspace: Workspace,
        catalog: CatalogSnapshot,
        catalog_diagnostics: Vec<Diagnostic>,
        cache: &CompileCache,
    ) -> Compilation {
        Self::compile_with(
            workspace,
            catalog,
            catalog_diagnostics,
            cache,
            &mut |_, _| (Vec::new(), Vec::new()),
        )
    }

    /// [`compile_cached`](Compilation::compile_cached), asking `missing` for sources of the
    /// relations nothing in the workspace resolves (see [`MissingRelations`]); the sources it
    /// gives are added to the workspace and the catalog, and the models reading them resolved
    /// again from their parse, without parsing again.
    pub fn compile_with(
        mut workspace: Workspace,
        mut catalog: CatalogSnapshot,
        catalog_diagnostics: Vec<Diagnostic>,
        cache: &CompileCache,
        missing: &mut MissingRelations<'_>,
    ) -> Compilation {
        let mut stats = CacheStats::default();
        let mut cache_errors = cache.prune();
        let cache = cache.session();
        let mut diagnostics = std::mem::take(&mut workspace.diagnostics);
        diagnostics.extend(catalog_diagnostics);
        let sql_dialect = default_dialect();
        let resolver = Resolver::new(&workspace);
        let mut compiled = crate::par::map(
            workspace.models.iter().enumerate().collect(),
            crate::PARALLEL_MIN_MODELS,
            |(index, file)| compile_model(index, file, &workspace, &resolver, &sql_dialect, &cache),
        );
        let test_files: Vec<Result<ParsedQuery, Diagnostic>> = workspace
            .tests
            .iter()
            .map(|f| parse_query(&f.text, &f.path, &sql_dialect))
            .collect();
        drop(resolver);
        let looked = add_missing_sources(
            &mut workspace,
            &mut catalog,
            &mut compiled,
            &test_files,
            missing,
        );
        let looked_up = looked.is_some();
        diagnostics.extend(looked.into_iter().flatten());
        let input_diagnostics = diagnostics.clone();
        let resolver = Resolver::new(&workspace);

        let mut models: Vec<Arc<CompiledModel>> = Vec::with_capacity(workspace.models.len());
        let mut edges = Vec::new();
        let mut canonical = Vec::with_capacity(compiled.len());
        for (index, entry) in compiled.into_iter().enumerate() {
            let CompiledEntry {
                model,
                diagnostics: diags,
                canonical: text,
                cache_hit,
                ..
            } = entry;
            canonical.push(text);
            if cache_hit {
                stats.parse_hits += 1;
            } else {
                stats.parsed.push(index);
            }
            let had_errors = diags.iter().any(Diagnostic::is_error);
            diagnostics.extend(diags);
            edges.extend(model.upstream.iter().map(|&u| (u, index)));
            models.push(Arc::new(CompiledModel {
                has_errors: model.has_errors || had_errors,
                ..model
            }));
        }
        // Directive problems live in the workspace diagnostics: mark those models too.
        let by_path: std::collections::HashMap<&str, usize> = models
            .iter()
            .enumerate()
            .map(|(i, m)| (m.path.as_str(), i))
            .collect();
        let erroneous: Vec<usize> = diagnostics
            .iter()
            .filter(|d| d.is_error())
            .filter_map(|d| by_path.get(d.file.as_deref()?).copied())
            .collect();
        drop(by_path);
        for i in erroneous {
            Arc::make_mut(&mut models[i]).has_errors = true;
        }

        let graph = ModelGraph::new(models.len(), edges);
        for cycle in graph.cycles() {
            diagnostics.push(cycle_diagnostic(&cycle, &models));
            for &i in &cycle {
                Arc::make_mut(&mut models[i]).has_errors = true;
            }
        }
        let order = graph.topological_order();
        let dialect = typing::load_dialect(&workspace, &mut diagnostics);
        let typed = typing::infer(
            &mut models,
            &order,
            &catalog,
            &workspace,
            &dialect,
            &cache,
            &mut diagnostics,
        );
        // The last stage that uses the cache: its new entries are written now.
        cache_errors.extend(cache.flush());
        diagnostics.extend(shared_cache_warning(cache_errors));
        stats.type_hits = typed.hits;
        stats.typed = typed.computed;
        let contracts = contracts::check(&mut models, &workspace, &dialect, &mut diagnostics);
        let all = 0..models.len();
        crate::incremental::check_columns(&mut models, &workspace, all, &mut diagnostics);
        compute_versions(&mut models, canonical, &order, &workspace, &catalog);
        let tests = compile_tests(
            &models,
            &workspace,
            test_files,
            &contracts,
            &resolver,
            &sql_dialect,
            &mut diagnostics,
        );
        diagnostics.sort();
        drop(resolver);
        Compilation {
            workspace,
            catalog,
            models,
            graph,
            order,
            tests,
            contracts,
            lineage: OnceLock::new(),
            dialect,
            diagnostics,
            cache_stats: stats,
            input_diagnostics,
            looked_up,
        }
    }

    /// The unoptimized DataFusion plan of a typed model, planned again against its inputs'
    /// inferred schemas (compiling keeps no plans); `None` when the model is not typed.
    pub fn logical_plan(&self, index: usize) -> Option<datafusion::logical_expr::LogicalPlan> {
        crate::typing::plan_model(&self.models, &self.catalog, &self.dialect, index)
    }

    /// The workspace's column-level lineage graph, built on first use from the per-model
    /// column lineage typing recorded.
    pub fn lineage(&self) -> &LineageGraph {
        self.lineage
            .get_or_init(|| LineageGraph::build(&self.lineage_inputs()))
    }

    /// What [`LineageGraph::build`] reads of this compilation.
    pub fn lineage_inputs(&self) -> LineageInputs<'_> {
        LineageInputs {
            models: &self.models,
            catalog: &self.catalog,
            tests: &self.tests,
            workspace: &self.workspace,
        }
    }

    pub fn model_index(&self, name: &str) -> Option<usize> {
        let name = ModelName::parse(name);
        self.models.binary_search_by(|m| m.name.cmp(&name)).ok()
    }

    /// The model a name given by a person means, as selectors read it: an exact name or
    /// `model://` URI, else a suffix of whole segments that only one model has
    /// (`result_facts` for `assay.marts.result_facts`).
    pub fn lookup_model(&self, name: &str) -> ModelLookup {
        if let Some(i) = self.model_index(name) {
            return ModelLookup::Found(i);
        }
        let hits: Vec<usize> = (0..self.models.len())
            .filter(|&i| self.models[i].name.ends_with_segments(name))
            .collect();
        match hits.as_slice() {
            [] => ModelLookup::Missing,
            [i] => ModelLookup::Found(*i),
            _ => ModelLookup::Ambiguous(hits),
        }
    }

    /// [`Self::lookup_model`] for a name given on a command line: P008 with did-you-mean
    /// suggestions for no model, L006 with the candidates for several.
    pub fn resolve_model(&self, name: &str) -> Result<usize, Diagnostic> {
        match self.lookup_model(name) {
            ModelLookup::Found(i) => Ok(i),
            ModelLookup::Missing => {
                let names = self.models.iter().map(|m| m.name.as_str());
                Err(
                    Diagnostic::error(codes::UNKNOWN_MODEL, format!("no model named `{name}`"))
                        .with_suggestions(phlo_transform_core::did_you_mean(name, names))
                        .with_help("`phlo-transform list` shows every model"),
                )
            }
            ModelLookup::Ambiguous(hits) => {
                let candidates: Vec<String> = hits
                    .iter()
                    .map(|&i| self.models[i].name.to_string())
                    .collect();
                Err(Diagnostic::error(
                    codes::AMBIGUOUS_SELECTOR,
                    format!("`{name}` is ambiguous: {} models end with it", hits.len()),
                )
                .with_note(format!("candidates: {}", candidates.join(", ")))
                .with_suggestions(candidates)
                .with_help("write more of the name, e.g. one of the candidates"))
            }
        }
    }

    pub fn config(&self, index: usize) -> &EffectiveConfig {
        &self.workspace.models[index].config
    }

    pub fn has_errors(&self) -> bool {
        self.diagnostics.has_errors()
    }

    pub fn dependencies(&self, index: usize) -> Vec<Dependency> {
        crate::model::dependencies(&self.models, index)
    }

    /// The model's query with relations replaced by physical names (`physical` names a model
    /// index or source) and ephemeral models inlined as derived tables, nested chains included.
    /// `physical` gives the identifier parts a model or source is addressed by.
    pub fn executable_query(
        &self,
        index: usize,
        physical: &dyn Fn(&Target) -> Vec<String>,
    ) -> Option<Query> {
        executable_query(&self.models, index, physical)
    }

    /// A test's violation query, rewritten like a model's.
    pub fn executable_test_query(
        &self,
        test: &CompiledTest,
        physical: &dyn Fn(&Target) -> Vec<String>,
    ) -> Option<Query> {
        rewrite(
            &self.models,
            (*test.query).clone(),
            &test.relations,
            physical,
        )
    }
}

/// Asks `missing` for sources of the relations nothing resolved in the `compiled` models and
/// the parsed `test_files`; adds what it finds to `workspace` and `catalog` and resolves the
/// models reading those again, from their kept parse. Returns the diagnostics of looking and
/// of reading the found sources; `None` when it found nothing and said nothing.
fn add_missing_sources(
    workspace: &mut Workspace,
    catalog: &mut CatalogSnapshot,
    compiled: &mut [CompiledEntry],
    test_files: &[Result<ParsedQuery, Diagnostic>],
    missing: &mut MissingRelations<'_>,
) -> Option<Vec<Diagnostic>> {
    let mut wanted: BTreeSet<Vec<String>> = compiled
        .iter()
        .filter_map(|c| c.unresolved.as_ref())
        .flat_map(|u| u.missing.iter().cloned())
        .collect();
    let resolver = Resolver::new(workspace);
    for (file, parsed) in workspace.tests.iter().zip(test_files) {
        let Ok(parsed) = parsed else { continue };
        wanted.extend(
            extract_relations(&parsed.query)
                .into_iter()
                .filter(|r| {
                    resolver
                        .resolve(r, Context::Test, &file.path)
                        .is_err_and(|d| d.code == codes::UNRESOLVED_RELATION)
                })
                .map(|r| r.parts),
        );
    }
    drop(resolver);
    if wanted.is_empty() {
        return None;
    }
    let (found, mut diagnostics) = missing(workspace, &wanted);
    if found.is_empty() {
        return (!diagnostics.is_empty()).then_some(diagnostics);
    }
    diagnostics.extend(catalog.read(workspace, &found));
    let names: BTreeSet<String> = found.iter().map(|s| s.name.clone()).collect();
    workspace.sources.extend(found);
    let resolver = Resolver::new(workspace);
    for (index, entry) in compiled.iter_mut().enumerate() {
        let reads_found = entry.unresolved.as_ref().is_some_and(|u| {
            u.missing
                .iter()
                .any(|parts| names.contains(&parts.join(".")))
        });
        if let (true, Some(Unresolved { text, parsed, .. })) =
            (reads_found, entry.unresolved.take())
        {
            let file = &workspace.models[index];
            let cache_hit = entry.cache_hit;
            *entry = resolve_model(index, file, workspace, &resolver, text, parsed);
            entry.cache_hit = cache_hit;
        }
    }
    Some(diagnostics)
}

/// What compiling one model gives.
struct CompiledEntry {
    model: CompiledModel,
    diagnostics: Vec<Diagnostic>,
    /// Its canonical SQL: relations replaced by the identities they resolve to; `None` when
    /// it did not parse or a relation did not resolve.
    canonical: Option<String>,
    /// Its parse, kept only when some of its relations did not resolve.
    unresolved: Option<Unresolved>,
    /// Whether the compile cache answered the parse.
    cache_hit: bool,
}

impl CompiledEntry {
    /// A model that failed before it could be resolved.
    fn failed(model: CompiledModel, diagnostics: Vec<Diagnostic>, cache_hit: bool) -> Self {
        CompiledEntry {
            model,
            diagnostics,
            canonical: None,
            unresolved: None,
            cache_hit,
        }
    }
}

/// A model of `file` with nothing compiled yet.
fn uncompiled(file: &ModelFile) -> CompiledModel {
    CompiledModel {
        name: file.name.clone(),
        id: file.id.clone(),
        path: file.path.clone(),
        materialization: file.config.materialized.value,
        sql: None,
        relations: Vec::new(),
        upstream: Vec::new(),
        sources: Vec::new(),
        version: None,
        has_errors: false,
        schema: None,
        plan_fingerprint: None,
        column_lineage: None,
    }
}

/// Parses (or reads from the cache), resolves and canonicalises one model; no AST is kept.
fn compile_model(
    index: usize,
    file: &ModelFile,
    ws: &Workspace,
    resolver: &Resolver,
    dialect: &dyn phlo_transform_sql::sqlparser::dialect::Dialect,
    cache: &CacheSession,
) -> CompiledEntry {
    let mut model = uncompiled(file);
    let text = if template::needs_rendering(&file.text) {
        match template::render(&file.text, &file.path, &ws.config.vars) {
            Ok(t) => t,
            Err(d) => {
                model.has_errors = true;
                return CompiledEntry::failed(model, vec![d], false);
            }
        }
    } else {
        file.text.clone()
    };
    // The target prints this AST as written: what its dialect lacks is an error now (A009).
    let target_dialect = ws
        .config
        .transform
        .dialect
        .as_deref()
        .unwrap_or("datafusion");
    let (parsed, hit) = crate::parsed::parse(&text, &file.path, target_dialect, dialect, cache);
    match parsed {
        Ok(parsed) => {
            let mut entry = resolve_model(index, file, ws, resolver, text, parsed);
            entry.cache_hit = hit;
            entry
        }
        Err(d) => {
            model.has_errors = true;
            CompiledEntry::failed(model, vec![d], hit)
        }
    }
}

/// Resolves and canonicalises one parsed model (see [`compile_model`]).
fn resolve_model(
    index: usize,
    file: &ModelFile,
    ws: &Workspace,
    resolver: &Resolver,
    text: String,
    parsed: Parsed,
) -> CompiledEntry {
    let mut diags = Vec::new();
    let mut model = uncompiled(file);
    let mut missing = Vec::new();
    let mut upstream = BTreeSet::new();
    let mut sources = BTreeSet::new();
    for relation in parsed.relations() {
        let target = match resolver.resolve(&relation, Context::Model(index), &file.path) {
            Ok(t) => Some(t),
            Err(d) => {
                if d.code == codes::UNRESOLVED_RELATION {
                    missing.push(relation.parts.clone());
                }
                diags.push(d);
                model.has_errors = true;
                None
            }
        };
        match &target {
            Some(Target::Model(i)) => {
                upstream.insert(*i);
            }
            Some(Target::Source(s)) => {
                sources.insert(s.clone());
            }
            None => {}
        }
        model.relations.push(ResolvedRelation { relation, target });
    }
    model.upstream = upstream.into_iter().collect();
    model.sources = sources.into_iter().collect();
    for u in &parsed.unsupported {
        let mut d = Diagnostic::error(codes::DIALECT_UNSUPPORTED, u.message.clone())
            .in_file(&file.path)
            .with_help(u.help.clone());
        if let Some(span) = u.span {
            d = d.with_span(crate::parsed::span_from(span));
        }
        diags.push(d);
        model.has_errors = true;
    }
    let canonical = parsed.canonical(|k| {
        Some(match model.relations[k].target.as_ref()? {
            Target::Model(u) => format!("model:{}", ws.models[*u].id),
            Target::Source(s) => format!("source:{s}"),
        })
    });
    model.sql = Some(text.as_str().into());
    let unresolved = (!missing.is_empty()).then_some(Unresolved {
        text,
        parsed,
        missing,
    });
    CompiledEntry {
        model,
        diagnostics: diags,
        canonical,
        unresolved,
        cache_hit: false,
    }
}

/// C008 for a shared compile cache that failed: one warning naming each failure, since the
/// compile went on without the store and only speed was lost.
fn shared_cache_warning(errors: Vec<String>) -> Option<Diagnostic> {
    if errors.is_empty() {
        return None;
    }
    let message = format!(
        "the shared compile cache could not be used: {}",
        errors.join("; ")
    );
    Some(
        Diagnostic::warning(codes::SHARED_CACHE_UNAVAILABLE, message).with_help(
            "the compile used the workspace's own cache; check the store in `[cache] url` (or the PostgreSQL state store), or set `url = \"none\"`",
        ),
    )
}

fn cycle_diagnostic(cycle: &[usize], models: &[Arc<CompiledModel>]) -> Diagnostic {
    let names: Vec<&str> = cycle.iter().map(|&i| models[i].name.as_str()).collect();
    let first = &models[cycle[0]];
    let next = cycle.get(1).copied().unwrap_or(cycle[0]);
    // Point at the reference in the first model that closes the loop (first → last before it).
    let closing = cycle[cycle.len() - 2];
    let span = models[next]
        .relations
        .iter()
        .find(|r| r.target == Some(Target::Model(cycle[0])))
        .and_then(|r| r.relation.span);
    let file = &models[next].path;
    let mut d = Diagnostic::error(
        codes::CYCLE,
        format!("dependency cycle: {}", names.join(" → ")),
    )
    .in_file(file)
    .with_help(format!(
        "break the cycle: `{}` cannot read `{}` while `{}` depends on it",
        models[next].name, first.name, models[closing].name
    ))
    .with_note(format!("cycle path:\n  {}", names.join("\n    → ")));
    if let Some(span) = span {
        d = d.with_span(span).with_label(format!(
            "`{}` reads `{}` here",
            models[next].name, first.name
        ));
    }
    d
}

fn compute_versions(
    models: &mut [Arc<CompiledModel>],
    canonical: Vec<Option<String>>,
    order: &[usize],
    ws: &Workspace,
    catalog: &CatalogSnapshot,
) {
    // The per-model parts (canonical SQL from parsing, fingerprints) in parallel; the
    // versions, which chain through upstream versions, in topological order.
    let parts: Vec<Option<(String, Fingerprints)>> = crate::par::map(
        canonical.into_iter().enumerate().collect(),
        crate::PARALLEL_MIN_MODELS,
        |(i, canonical)| {
            let m = &models[i];
            if m.has_errors {
                return None;
            }
            let canonical = canonical?;
            let fingerprints = Fingerprints {
                text: phlo_transform_core::hash::sha256_hex(&ws.models[i].text),
                plan: m.plan_fingerprint.clone(),
            };
            Some((canonical, fingerprints))
        },
    );
    let mut parts: Vec<Option<(String, Fingerprints)>> = parts;
    for &i in order {
        let Some((canonical, fingerprints)) = parts[i].take() else {
            continue;
        };
        let mut upstream = BTreeMap::new();
        let mut complete = true;
        for &u in &models[i].upstream {
            match &models[u].version {
                Some(v) => {
                    upstream.insert(models[u].id.clone(), v.version.clone());
                }
                None => complete = false,
            }
        }
        let mut sources = BTreeMap::new();
        for s in &models[i].sources {
            match catalog.sources.get(s) {
                Some(state) => {
                    sources.insert(s.clone(), state.state.clone());
                }
                None => complete = false,
            }
        }
        if complete {
            Arc::make_mut(&mut models[i]).version = Some(ModelVersion::compute(
                &canonical,
                &ws.models[i].config,
                upstream,
                sources,
                fingerprints,
            ));
        }
    }
}

/// The generated tests of the models and the data tests of `ws.tests`, whose files
/// `test_files` are, parsed (in the same order).
fn compile_tests(
    models: &[Arc<CompiledModel>],
    ws: &Workspace,
    test_files: Vec<Result<ParsedQuery, Diagnostic>>,
    contracts: &BTreeMap<usize, Contract>,
    resolver: &Resolver,
    dialect: &(dyn phlo_transform_sql::sqlparser::dialect::Dialect + Sync),
    diagnostics: &mut Diagnostics,
) -> Vec<CompiledTest> {
    let mut tests = Vec::new();
    // Two small queries per keyed model, 9,400 at 10,000 realistic models: parsed on the
    // compiler threads rather than one after the other on this one (issue 17).
    let generated = crate::par::map(
        (0..models.len()).collect(),
        crate::PARALLEL_MIN_MODELS,
        |index| generated_tests(index, models, ws, contracts, dialect),
    );
    for result in generated.into_iter().flatten() {
        match result {
            Ok(test) => tests.push(test),
            Err(d) => diagnostics.push(d),
        }
    }
    for (file, parsed) in ws.tests.iter().zip(test_files) {
        let parsed = match parsed {
            Ok(p) => p,
            Err(d) => {
                diagnostics.push(d);
                continue;
            }
        };
        let mut relations = Vec::new();
        let mut targets = BTreeSet::new();
        let mut ok = true;
        for relation in extract_relations(&parsed.query) {
            match resolver.resolve(&relation, Context::Test, &file.path) {
                Ok(t) => {
                    if let Target::Model(i) = t {
                        targets.insert(i);
                    }
                    relations.push(ResolvedRelation {
                        relation,
                        target: Some(t),
                    });
                }
                Err(d) => {
                    diagnostics.push(d);
                    ok = false;
                }
            }
        }
        if ok {
            tests.push(CompiledTest {
                name: file.name.clone(),
                kind: TestKind::Custom {
                    path: file.path.clone(),
                },
                targets: targets.into_iter().collect(),
                query: parsed.query.into(),
                relations,
            });
        }
    }
    tests
}

/// The generated tests of model `index` (`not_null` for its key, `@not_null` and contract
/// columns the plan cannot prove non-null; `unique` for its key), or why one is invalid.
fn generated_tests(
    index: usize,
    models: &[Arc<CompiledModel>],
    ws: &Workspace,
    contracts: &BTreeMap<usize, Contract>,
    dialect: &dyn phlo_transform_sql::sqlparser::dialect::Dialect,
) -> Vec<Result<CompiledTest, Diagnostic>> {
    let (model, file) = (&models[index], &ws.models[index]);
    if model.has_errors {
        return Vec::new();
    }
    let key = &file.config.key.value;
    let mut not_null: Vec<&String> = key.iter().collect();
    not_null.extend(
        file.config
            .not_null
            .value
            .iter()
            .filter(|c| !key.contains(c)),
    );
    // Contract columns declared non-null that the plan cannot prove non-null.
    let columns = model
        .schema
        .as_ref()
        .and_then(ModelSchema::columns)
        .unwrap_or_default();
    let declared_not_null = contracts
        .get(&index)
        .into_iter()
        .flat_map(|c| &c.columns)
        .filter(|c| {
            c.nullable == Some(false)
                && columns.iter().any(|col| col.name == c.name && col.nullable)
        });
    for c in declared_not_null {
        if !not_null.contains(&&c.name) {
            not_null.push(&c.name);
        }
    }
    let mut kinds: Vec<TestKind> = not_null
        .into_iter()
        .map(|c| TestKind::NotNull { column: c.clone() })
        .collect();
    if !key.is_empty() {
        kinds.push(TestKind::Unique {
            columns: key.clone(),
        });
    }
    kinds
        .into_iter()
        .map(|kind| {
            let sql = generated_sql(&kind, model.name.as_str());
            let name = match &kind {
                TestKind::NotNull { column } => format!("{}.not_null.{column}", model.name),
                TestKind::Unique { columns } => {
                    format!("{}.unique.{}", model.name, columns.join("_"))
                }
                TestKind::Custom { .. } => unreachable!(),
            };
            let Ok(parsed) = parse_query(&sql, &model.path, dialect) else {
                return Err(Diagnostic::error(
                    codes::INVALID_DIRECTIVE_ARGUMENT,
                    format!("`{name}`: the column list is not valid SQL"),
                )
                .in_file(&model.path)
                .with_help("list plain column names, separated by commas"));
            };
            let relations = extract_relations(&parsed.query)
                .into_iter()
                .map(|relation| ResolvedRelation {
                    relation,
                    target: Some(Target::Model(index)),
                })
                .collect();
            Ok(CompiledTest {
                name,
                kind,
                targets: vec![index],
                query: parsed.query.into(),
                relations,
            })
        })
        .collect()
}
