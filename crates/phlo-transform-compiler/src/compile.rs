//! `Compilation::compile`: parse every model, resolve its relations, build the graph, report
//! cycles, compute versions in topological order and compile tests. Every problem in the
//! workspace is reported in one pass.

use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::{Diagnostic, Diagnostics, ModelName};
use phlo_transform_project::{EffectiveConfig, Materialization, ModelFile, Workspace};
use phlo_transform_sql::canonical::canonical_text;
use phlo_transform_sql::parse::default_dialect;
use phlo_transform_sql::sqlparser::ast::Query;
use phlo_transform_sql::{
    extract_relations, parse_query, rewrite_relations, template, RelationRef, Replacement,
};
use std::collections::{BTreeMap, BTreeSet};

use crate::catalog::CatalogSnapshot;
use crate::contracts::{self, Contract};
use crate::graph::ModelGraph;
use crate::lineage::{ColumnDerivations, LineageGraph};
use crate::resolve::{Context, Resolver, Target};
use crate::tests::{generated_sql, CompiledTest, TestKind};
use crate::typing::{self, ModelSchema};
use crate::version::{Fingerprints, ModelVersion};
use std::sync::{Arc, OnceLock};

/// A relation as written and what it resolved to (`None`: unresolved, already reported).
#[derive(Clone, Debug)]
pub struct ResolvedRelation {
    pub relation: RelationRef,
    pub target: Option<Target>,
}

/// A dependency of a model, for reports.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(tag = "kind", content = "name", rename_all = "lowercase")]
pub enum Dependency {
    Model(String),
    Source(String),
}

#[derive(Clone, Debug)]
pub struct CompiledModel {
    pub name: ModelName,
    pub id: String,
    pub path: String,
    pub materialization: Materialization,
    /// The SQL after templating; `None` when the file did not parse. The parsed query is not
    /// kept: a sqlparser AST is about a hundred times the size of its text, so at 10,000
    /// models they would not fit the memory budget (issue 17). `query()` parses it again.
    pub sql: Option<Arc<str>>,
    pub relations: Vec<ResolvedRelation>,
    /// Upstream model indices, sorted.
    pub upstream: Vec<usize>,
    /// Source names read directly, sorted.
    pub sources: Vec<String>,
    /// `None` when the model, or anything upstream of it, has errors.
    pub version: Option<ModelVersion>,
    /// True when this model's own file has an error.
    pub has_errors: bool,
    /// Inferred output schema; `None` when the model (or an input) has errors.
    pub schema: Option<ModelSchema>,
    /// Fingerprint of the unoptimized DataFusion plan the schema comes from (`None`: untyped).
    /// The plan itself is dropped once typed: at 10,000 models all plans would not fit the
    /// memory budget (issue 17), and this and `column_lineage` are all that is read from it.
    pub plan_fingerprint: Option<String>,
    /// The lineage of each output column, read off the plan while it was alive; `None` when
    /// the model is untyped.
    pub column_lineage: Option<Vec<ColumnDerivations>>,
}

impl CompiledModel {
    /// The parsed query, `None` when the file did not parse. Parsed again on every call: keep
    /// it only as long as it is needed.
    pub fn query(&self) -> Option<Box<Query>> {
        let sql = self.sql.as_deref()?;
        // It parsed when compiled; parsing is deterministic.
        parse_query(sql, &self.path, &default_dialect())
            .ok()
            .map(|p| p.query)
    }
}

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
        crate::typing::plan_model(self, index)
    }

    /// The workspace's column-level lineage graph, built on first use from the per-model
    /// column lineage typing recorded.
    pub fn lineage(&self) -> &LineageGraph {
        self.lineage.get_or_init(|| LineageGraph::build(self))
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

    pub fn config(&self, index: usize) -> &EffectiveConfig {
        &self.workspace.models[index].config
    }

    pub fn has_errors(&self) -> bool {
        self.diagnostics.has_errors()
    }

    pub fn dependencies(&self, index: usize) -> Vec<Dependency> {
        let m = &self.models[index];
        let mut deps: Vec<Dependency> = m
            .upstream
            .iter()
            .map(|&u| Dependency::Model(self.models[u].name.to_string()))
            .chain(m.sources.iter().cloned().map(Dependency::Source))
            .collect();
        deps.sort();
        deps
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

pub(crate) fn executable_query(
    models: &[CompiledModel],
    index: usize,
    physical: &dyn Fn(&Target) -> Vec<String>,
) -> Option<Query> {
    let m = &models[index];
    rewrite(models, *m.query()?, &m.relations, physical)
}

/// The model's query with every relation, ephemeral models included, replaced by `physical`.
/// Typing plans an ephemeral model once and its readers against its schema, so the lineage
/// graph sees the ephemeral model as the dataset its readers read.
pub(crate) fn typing_query(
    models: &[CompiledModel],
    index: usize,
    physical: &dyn Fn(&Target) -> String,
) -> Option<Query> {
    let m = &models[index];
    let mut q = *m.query()?;
    rewrite_relations(&mut q, |parts| {
        let r = m.relations.iter().find(|r| r.relation.parts == parts)?;
        Some(Replacement::Name(physical(r.target.as_ref()?)))
    });
    Some(q)
}

fn rewrite(
    models: &[CompiledModel],
    mut q: Query,
    relations: &[ResolvedRelation],
    physical: &dyn Fn(&Target) -> Vec<String>,
) -> Option<Query> {
    let mut failed = false;
    rewrite_relations(&mut q, |parts| {
        let target = relations
            .iter()
            .find(|r| r.relation.parts == parts)?
            .target
            .as_ref()?;
        match target {
            Target::Model(i) if models[*i].materialization == Materialization::Ephemeral => {
                match executable_query(models, *i, physical) {
                    Some(inner) => Some(Replacement::Derived(Box::new(inner))),
                    None => {
                        failed = true;
                        None
                    }
                }
            }
            other => Some(Replacement::Parts(physical(other))),
        }
    });
    (!failed).then_some(q)
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
