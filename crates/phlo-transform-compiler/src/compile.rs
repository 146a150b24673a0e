//! `Compilation::compile`: parse every model, resolve its relations, build the graph, report
//! cycles, compute versions in topological order and compile tests. Every problem in the
//! workspace is reported in one pass.

use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::{Diagnostic, Diagnostics, ModelName};
use phlo_transform_project::{EffectiveConfig, ModelFile, Workspace};
use phlo_transform_sql::canonical::canonical_text;
use phlo_transform_sql::parse::default_dialect;
use phlo_transform_sql::sqlparser::ast::Query;
use phlo_transform_sql::{extract_relations, parse_query, template};
use std::collections::{BTreeMap, BTreeSet};

use crate::catalog::CatalogSnapshot;
use crate::contracts::{self, Contract};
use crate::graph::ModelGraph;
use crate::lineage::{LineageGraph, LineageInputs};
use crate::model::{executable_query, rewrite};
use crate::model::{CompiledModel, Dependency, ModelSchema, ResolvedRelation};
use crate::resolve::{Context, Resolver, Target};
use crate::tests::{generated_sql, CompiledTest, TestKind};
use crate::typing;
use crate::version::{Fingerprints, ModelVersion};
use std::sync::OnceLock;

/// The immutable result of compiling a workspace.
pub struct Compilation {
    pub workspace: Workspace,
    pub catalog: CatalogSnapshot,
    /// Same order and indices as `workspace.models` (sorted by name).
    pub models: Vec<CompiledModel>,
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
}

/// What [`Compilation::lookup_model`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ModelLookup {
    Found(usize),
    /// Several models end with the name; their indexes.
    Ambiguous(Vec<usize>),
    Missing,
}

impl Compilation {
    pub fn compile(
        mut workspace: Workspace,
        catalog: CatalogSnapshot,
        catalog_diagnostics: Vec<Diagnostic>,
    ) -> Compilation {
        let mut diagnostics = std::mem::take(&mut workspace.diagnostics);
        diagnostics.extend(catalog_diagnostics);
        let resolver = Resolver::new(&workspace);
        let sql_dialect = default_dialect();

        let mut models: Vec<CompiledModel> = Vec::with_capacity(workspace.models.len());
        let mut edges = Vec::new();
        let compiled = crate::par::map(
            workspace.models.iter().enumerate().collect(),
            |(index, file)| compile_model(index, file, &workspace, &resolver, &sql_dialect),
        );
        let mut canonical = Vec::with_capacity(compiled.len());
        for (index, (model, diags, text)) in compiled.into_iter().enumerate() {
            canonical.push(text);
            let had_errors = diags.iter().any(Diagnostic::is_error);
            diagnostics.extend(diags);
            edges.extend(model.upstream.iter().map(|&u| (u, index)));
            models.push(CompiledModel {
                has_errors: model.has_errors || had_errors,
                ..model
            });
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
            models[i].has_errors = true;
        }

        let graph = ModelGraph::new(models.len(), edges);
        for cycle in graph.cycles() {
            diagnostics.push(cycle_diagnostic(&cycle, &models));
            for &i in &cycle {
                models[i].has_errors = true;
            }
        }
        let order = graph.topological_order();
        let dialect = typing::load_dialect(&workspace, &mut diagnostics);
        typing::infer(
            &mut models,
            &order,
            &catalog,
            &workspace,
            &dialect,
            &mut diagnostics,
        );
        let contracts = contracts::check(&mut models, &workspace, &dialect, &mut diagnostics);
        crate::incremental::check_columns(&mut models, &workspace, &mut diagnostics);
        compute_versions(&mut models, canonical, &order, &workspace, &catalog);
        let tests = compile_tests(
            &models,
            &workspace,
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

/// Parses, resolves and canonicalises one model. Returns the model, its diagnostics and its
/// canonical SQL (relations replaced by the identities they resolve to; `None` when it did
/// not parse); the AST is dropped here.
fn compile_model(
    index: usize,
    file: &ModelFile,
    ws: &Workspace,
    resolver: &Resolver,
    dialect: &dyn phlo_transform_sql::sqlparser::dialect::Dialect,
) -> (CompiledModel, Vec<Diagnostic>, Option<String>) {
    let mut diags = Vec::new();
    let mut model = CompiledModel {
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
    };
    let text = if template::needs_rendering(&file.text) {
        match template::render(&file.text, &file.path, &ws.config.vars) {
            Ok(t) => t,
            Err(d) => {
                diags.push(d);
                model.has_errors = true;
                return (model, diags, None);
            }
        }
    } else {
        file.text.clone()
    };
    let parsed = match parse_query(&text, &file.path, dialect) {
        Ok(p) => p,
        Err(d) => {
            diags.push(d);
            model.has_errors = true;
            return (model, diags, None);
        }
    };
    let mut upstream = BTreeSet::new();
    let mut sources = BTreeSet::new();
    for relation in extract_relations(&parsed.query) {
        let target = match resolver.resolve(&relation, Context::Model(index), &file.path) {
            Ok(t) => Some(t),
            Err(d) => {
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
    // The target prints this AST as written: what its dialect lacks is an error now (A009).
    let target = ws
        .config
        .transform
        .dialect
        .as_deref()
        .unwrap_or("datafusion");
    for u in phlo_transform_sql::dialects::unsupported(&parsed.query, target) {
        let mut d = Diagnostic::error(codes::DIALECT_UNSUPPORTED, u.message)
            .in_file(&file.path)
            .with_help(u.help);
        if let Some(span) = u.span {
            d = d.with_span(span);
        }
        diags.push(d);
        model.has_errors = true;
    }
    let canonical = canonical_text(&parsed.query, |parts| {
        let target = model
            .relations
            .iter()
            .find(|r| r.relation.parts == parts)?
            .target
            .as_ref()?;
        Some(match target {
            Target::Model(u) => format!("model:{}", ws.models[*u].id),
            Target::Source(s) => format!("source:{s}"),
        })
    });
    model.sql = Some(text.into());
    (model, diags, Some(canonical))
}

fn cycle_diagnostic(cycle: &[usize], models: &[CompiledModel]) -> Diagnostic {
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
    models: &mut [CompiledModel],
    canonical: Vec<Option<String>>,
    order: &[usize],
    ws: &Workspace,
    catalog: &CatalogSnapshot,
) {
    // The per-model parts (canonical SQL from parsing, fingerprints) in parallel; the
    // versions, which chain through upstream versions, in topological order.
    let parts: Vec<Option<(String, Fingerprints)>> = crate::par::map(
        canonical.into_iter().enumerate().collect(),
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
            models[i].version = Some(ModelVersion::compute(
                &canonical,
                &ws.models[i].config,
                upstream,
                sources,
                fingerprints,
            ));
        }
    }
}

fn compile_tests(
    models: &[CompiledModel],
    ws: &Workspace,
    contracts: &BTreeMap<usize, Contract>,
    resolver: &Resolver,
    dialect: &dyn phlo_transform_sql::sqlparser::dialect::Dialect,
    diagnostics: &mut Diagnostics,
) -> Vec<CompiledTest> {
    let mut tests = Vec::new();
    for (index, (model, file)) in models.iter().zip(&ws.models).enumerate() {
        if model.has_errors {
            continue;
        }
        let key = &file.config.key.value;
        let mut kinds: Vec<TestKind> = Vec::new();
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
        kinds.extend(
            not_null
                .into_iter()
                .map(|c| TestKind::NotNull { column: c.clone() }),
        );
        if !key.is_empty() {
            kinds.push(TestKind::Unique {
                columns: key.clone(),
            });
        }
        for kind in kinds {
            let sql = generated_sql(&kind, model.name.as_str());
            let name = match &kind {
                TestKind::NotNull { column } => format!("{}.not_null.{column}", model.name),
                TestKind::Unique { columns } => {
                    format!("{}.unique.{}", model.name, columns.join("_"))
                }
                TestKind::Custom { .. } => unreachable!(),
            };
            match parse_query(&sql, &model.path, dialect) {
                Ok(parsed) => {
                    let relations = extract_relations(&parsed.query)
                        .into_iter()
                        .map(|relation| ResolvedRelation {
                            relation,
                            target: Some(Target::Model(index)),
                        })
                        .collect();
                    tests.push(CompiledTest {
                        name,
                        kind,
                        targets: vec![index],
                        query: parsed.query,
                        relations,
                    });
                }
                Err(_) => diagnostics.push(
                    Diagnostic::error(
                        codes::INVALID_DIRECTIVE_ARGUMENT,
                        format!("`{name}`: the column list is not valid SQL"),
                    )
                    .in_file(&model.path)
                    .with_help("list plain column names, separated by commas"),
                ),
            }
        }
    }
    for file in &ws.tests {
        let parsed = match parse_query(&file.text, &file.path, dialect) {
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
                query: parsed.query,
                relations,
            });
        }
    }
    tests
}
