//! `import dbt <dbt-project-dir> --out DIR`: a dbt project as a phlo-transform workspace.
//!
//! Models (`models/**/*.sql`) become `transforms/<project>/<folders>/<name>.sql`, named
//! `<project>.<folders>.<name>`, with `{{ ref() }}` and `{{ source() }}` replaced by the
//! relations' names and their settings (folder configuration in dbt_project.yml, the YAML's
//! `config:`, `{{ config() }}`) as header directives; seeds become CSV sources
//! `seeds.<name>`; sources with data in the project are declared in phlo.toml; descriptions go
//! to `[model."<name>"]` in phlo.toml; generic tests to `@not-null` or data tests under
//! `tests/` ([`generic_tests`]). What has no plain-SQL meaning ([`jinja`]), macros, Python
//! models and other tests are listed with file and line ([`Unconverted`], P017) and left out
//! — and so is every model that reads one left out — never silently changed. The dbt profile's engine
//! (`duckdb`, `postgres`, `trino`) becomes the workspace's dialect, so the SQL means what it
//! meant.

mod generic_tests;
mod jinja;
mod project;
mod properties;
mod report;

pub use report::{ImportReport, ImportedModel, Unconverted};

use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::names::check_segment;
use phlo_transform_core::Diagnostic;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::init::{refuse_unless_empty, write_new, Refusal};
use jinja::{Literal, Reference};
use project::DbtProject;
use properties::{ColumnProps, Properties, TestSpec};

const REFUSAL: Refusal = Refusal {
    not_empty: codes::IMPORT_TARGET_NOT_EMPTY,
    unreadable: codes::IMPORT_WRITE_FAILED,
    help: "give --out a new or empty directory; import never overwrites",
};

/// The dbt engines whose SQL dialect phlo-transform has (`[transform] dialect`).
const DIALECTS: &[&str] = &["duckdb", "postgres", "trino"];

/// What an import wrote, and a warning (P017) per thing left out.
pub struct Imported {
    pub report: ImportReport,
    pub diagnostics: Vec<Diagnostic>,
}

/// A model file of the dbt project.
struct DbtModel {
    dbt_name: String,
    /// Relative to the project (`models/staging/stg_orders.sql`).
    file: String,
    /// Folders below its model path.
    dirs: Vec<String>,
    /// `<project>.<folders>.<name>`.
    name: String,
    text: String,
}

/// A model converted, before its tests are known.
struct Converted {
    model: usize,
    sql: String,
    directives: Vec<String>,
    materialization: String,
    /// dbt models it reads, with the line.
    reads: Vec<(String, usize)>,
}

fn relative(path: &Path, root: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .to_string_lossy()
        .replace('\\', "/")
}

/// Files under `dir` (sorted, so the import is deterministic) whose name ends with one of
/// `suffixes`.
fn files(dir: &Path, suffixes: &[&str]) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = walkdir::WalkDir::new(dir)
        .into_iter()
        .flatten()
        .filter(|e| e.file_type().is_file())
        .map(|e| e.into_path())
        .filter(|p| {
            let name = p.to_string_lossy();
            suffixes.iter().any(|s| name.ends_with(s))
        })
        .collect();
    out.sort();
    out
}

/// `{% docs name %}…{% enddocs %}` blocks of the models' Markdown files, for descriptions
/// written `{{ doc("name") }}`.
fn doc_blocks(text: &str, into: &mut BTreeMap<String, String>) {
    let mut rest = text;
    while let Some(start) = rest.find("{% docs ") {
        let after = &rest[start + 8..];
        let Some(close) = after.find("%}") else { break };
        let name = after[..close].trim().to_string();
        let body = &after[close + 2..];
        let Some(end) = body.find("{% enddocs %}") else {
            break;
        };
        into.insert(name, body[..end].trim().to_string());
        rest = &body[end..];
    }
}

/// A description with `{{ doc("x") }}` replaced by the docs block.
fn describe(text: &str, docs: &BTreeMap<String, String>) -> String {
    let trimmed = text.trim();
    if let Some(inner) = trimmed
        .strip_prefix("{{")
        .and_then(|t| t.strip_suffix("}}"))
    {
        if let Some(call) = jinja::parse_call(inner.trim()) {
            if let ("doc", [Literal::Str(name)]) = (call.name.as_str(), call.args.as_slice()) {
                if let Some(block) = docs.get(name) {
                    return block.clone();
                }
            }
        }
    }
    text.to_string()
}

/// Whether `sql` names `column` as a word (case-insensitive): a description or test of a
/// column the model's SQL never names is a stale YAML entry, and would fail `check`.
fn names_column(sql: &str, column: &str) -> bool {
    let lower = sql.to_lowercase();
    let column = column.to_lowercase();
    lower.match_indices(&column).any(|(i, _)| {
        let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
        let before = lower[..i].chars().next_back().is_none_or(|c| !word(c));
        let after = lower[i + column.len()..]
            .chars()
            .next()
            .is_none_or(|c| !word(c));
        before && after
    })
}

/// The engine of the project's dbt profile (`profiles.yml` beside dbt_project.yml), when it
/// is one whose dialect phlo-transform has.
fn profile_dialect(dir: &Path, profile: Option<&str>) -> Option<String> {
    let (doc, _) = project::read_yaml(&dir.join("profiles.yml"), "profiles.yml").ok()?;
    let profile = doc.get(profile?)?;
    let target = profile.get("target").and_then(|t| t.as_str())?;
    let kind = profile.get("outputs")?.get(target)?.get("type")?.as_str()?;
    DIALECTS.contains(&kind).then(|| kind.to_string())
}

/// dbt configurations outside [`project::CONFIG_KEYS`] that change what a materialization
/// writes: refused like the unconverted ones of that list.
const ROW_SETTINGS: &[&str] = &[
    "incremental_predicates",
    "predicates",
    "snapshot",
    "external",
];

/// A setting of a model's, with the file and line that give it.
type Setting = (String, Literal, String, usize);

/// The directives of a model's settings, its materialisation, and the settings that no
/// materialization reads (imported without them, listed); `Err` names the setting that has
/// no phlo-transform equivalent, at its file and line.
fn directives(settings: &[Setting]) -> Result<(Vec<String>, String, Vec<Setting>), Unconverted> {
    let mut materialized = "view".to_string();
    let mut tags: BTreeSet<String> = BTreeSet::new();
    let mut unique_key: Option<Vec<String>> = None;
    let mut strategy: Option<String> = None;
    let mut partition_by: Option<Vec<String>> = None;
    let mut event_time: Option<String> = None;
    let mut inert = Vec::new();
    let refuse = |key: &str, value: &Literal, file: &str, line: usize| Unconverted {
        file: file.to_string(),
        line,
        left_out: String::new(),
        reason: format!("setting `{key}: {value}`"),
    };
    for (key, value, file, line) in settings {
        match (key.as_str(), value) {
            ("materialized", Literal::Str(m))
                if matches!(m.as_str(), "table" | "view" | "ephemeral" | "incremental") =>
            {
                materialized = m.clone();
            }
            ("tags", v) => match v.strings() {
                Some(list) => tags.extend(list),
                None => return Err(refuse(key, value, file, *line)),
            },
            ("unique_key", v) if v.strings().is_some() => unique_key = v.strings(),
            ("incremental_strategy", Literal::Str(s)) => strategy = Some(s.clone()),
            ("partition_by", v) if v.strings().is_some() => partition_by = v.strings(),
            ("event_time", Literal::Str(s)) => event_time = Some(s.clone()),
            ("enabled", Literal::Bool(true)) => {}
            // Where the relation lives and how it is documented: the workspace decides that.
            (
                "schema" | "alias" | "database" | "docs" | "persist_docs" | "meta" | "grants"
                | "access" | "group" | "contract" | "full_refresh" | "on_schema_change",
                _,
            ) => {}
            ("enabled", Literal::Bool(false)) => {
                return Err(Unconverted {
                    file: file.clone(),
                    line: *line,
                    left_out: String::new(),
                    reason: "disabled in dbt (`enabled: false`)".into(),
                })
            }
            // Not a configuration dbt or an adapter of the three dialects reads (an
            // integration's own, `cluster_by` for another warehouse): no materialization the
            // import converts looks at it, so the rows do not depend on it. It is listed.
            (k, _) if !project::CONFIG_KEYS.contains(&k) && !ROW_SETTINGS.contains(&k) => {
                inert.push((key.clone(), value.clone(), file.clone(), *line));
            }
            _ => return Err(refuse(key, value, file, *line)),
        }
    }
    let mut out = Vec::new();
    let at = |key: &str| {
        settings
            .iter()
            .rev()
            .find(|(k, ..)| k == key)
            .map(|(_, v, f, l)| (v.clone(), f.clone(), *l))
    };
    match materialized.as_str() {
        "incremental" => {
            let spec = match (strategy.as_deref(), &unique_key, &partition_by, &event_time) {
                (Some("append") | None, None, _, _) => "append".to_string(),
                (Some("merge" | "delete+insert") | None, Some(key), _, _) => {
                    format!("key={}", key.join(","))
                }
                (Some("insert_overwrite"), _, Some(cols), _) => {
                    format!("partition={}", cols.join(","))
                }
                (Some("microbatch"), _, _, Some(col)) => format!("window={col}"),
                _ => {
                    let (value, file, line) = at("incremental_strategy")
                        .or_else(|| at("materialized"))
                        .expect("incremental is set by a setting");
                    return Err(refuse("incremental_strategy", &value, &file, line));
                }
            };
            out.push(format!("@incremental {spec}"));
        }
        other => out.push(format!("@{other}")),
    }
    if !tags.is_empty() {
        out.push(format!(
            "@tags {}",
            tags.into_iter().collect::<Vec<_>>().join(",")
        ));
    }
    Ok((out, materialized, inert))
}

/// The data test files, by name (a second test of the same name gets `_2`, …).
#[derive(Default)]
struct TestFiles(BTreeMap<String, String>);

impl TestFiles {
    fn add(&mut self, name: String, sql: String, origin: &TestSpec) {
        let mut unique = name.clone();
        let mut n = 2;
        while self.0.contains_key(&unique) {
            unique = format!("{name}_{n}");
            n += 1;
        }
        self.0.insert(
            unique,
            format!(
                "-- Imported from dbt: test `{}` in {}\n{sql}",
                origin.name, origin.file
            ),
        );
    }
}

/// The relation tests are written against.
struct Target<'a> {
    /// Its phlo-transform name.
    name: &'a str,
    /// Its dbt name, in the tests' names.
    short: &'a str,
    /// A model's converted SQL (a source has none).
    sql: Option<&'a str>,
}

/// The tests of `target`'s columns and of `target` itself: `@not-null` columns into
/// `not_null`, data tests into `files`, the rest into `unconverted`.
fn convert_tests(
    target: &Target<'_>,
    columns: &[ColumnProps],
    whole: &[TestSpec],
    resolve: &dyn Fn(&Reference) -> Result<String, String>,
    files: &mut TestFiles,
    not_null: &mut Vec<String>,
    unconverted: &mut Vec<Unconverted>,
) {
    let each = columns
        .iter()
        .flat_map(|c| c.tests.iter().map(move |t| (Some(c.name.as_str()), t)))
        .chain(whole.iter().map(|t| (None, t)));
    for (column, spec) in each {
        let left_out = match column {
            Some(c) => format!("test {}({}.{c})", spec.name, target.short),
            None => format!("test {}({})", spec.name, target.short),
        };
        if let (Some(sql), Some(c)) = (target.sql, column) {
            if !names_column(sql, c) {
                unconverted.push(Unconverted {
                    file: spec.file.clone(),
                    line: spec.line,
                    left_out,
                    reason: format!("the model's SQL never names the column `{c}`"),
                });
                continue;
            }
        }
        match generic_tests::convert(spec, target.name, target.short, column, &mut |r| resolve(r)) {
            Ok(generic_tests::Converted::NotNull(c)) => not_null.push(c),
            Ok(generic_tests::Converted::File { name, sql }) => files.add(name, sql, spec),
            Err(reason) => unconverted.push(Unconverted {
                file: spec.file.clone(),
                line: spec.line,
                left_out,
                reason,
            }),
        }
    }
}

/// Imports the dbt project at `dir` into the new workspace `out`.
pub fn import(dir: &Path, out: &Path) -> Result<Imported, Diagnostic> {
    let project = DbtProject::read(dir)?;
    check_segment(&project.name).map_err(|e| {
        Diagnostic::error(
            codes::DBT_PROJECT_UNREADABLE,
            format!(
                "the project's name `{}` cannot be a namespace: {e}",
                project.name
            ),
        )
        .in_file("dbt_project.yml")
        .with_help("rename the project in dbt_project.yml to a lower-case identifier")
    })?;
    let shown = out.display().to_string();
    refuse_unless_empty(out, &shown, &REFUSAL)?;

    let mut unconverted: Vec<Unconverted> = Vec::new();
    let mut properties = Properties::default();
    let mut docs = BTreeMap::new();
    let mut models: Vec<DbtModel> = Vec::new();
    for model_path in &project.model_paths {
        let base = dir.join(model_path);
        for path in files(&base, &[".yml", ".yaml"]) {
            let file = relative(&path, dir);
            let (doc, text) = project::read_yaml(&path, &file)?;
            properties.add(&file, &doc, &text);
        }
        for path in files(&base, &[".md"]) {
            doc_blocks(
                &std::fs::read_to_string(&path).unwrap_or_default(),
                &mut docs,
            );
        }
        for path in files(&base, &[".py"]) {
            unconverted.push(Unconverted {
                file: relative(&path, dir),
                line: 1,
                left_out: format!(
                    "model {}",
                    path.file_stem().unwrap_or_default().to_string_lossy()
                ),
                reason: "a Python model".into(),
            });
        }
        for path in files(&base, &[".sql"]) {
            let file = relative(&path, dir);
            let dbt_name = path
                .file_stem()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            let dirs: Vec<String> = relative(path.parent().unwrap_or(&base), &base)
                .split('/')
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect();
            let mut segments = vec![project.name.clone()];
            segments.extend(dirs.iter().cloned());
            segments.push(dbt_name.clone());
            if let Some(e) = segments.iter().find_map(|s| check_segment(s).err()) {
                unconverted.push(Unconverted {
                    file,
                    line: 1,
                    left_out: format!("model {dbt_name}"),
                    reason: format!("its path cannot be a model name: {e}"),
                });
                continue;
            }
            let text = std::fs::read_to_string(&path).map_err(|e| {
                Diagnostic::error(
                    codes::DBT_PROJECT_UNREADABLE,
                    format!("cannot read {file}: {e}"),
                )
                .in_file(&file)
                .with_help("check the file's permissions")
            })?;
            models.push(DbtModel {
                dbt_name,
                file,
                dirs,
                name: segments.join("."),
                text,
            });
        }
    }
    // dbt reads the properties of seeds from YAML beside them too.
    for seed_path in &project.seed_paths {
        if project.model_paths.contains(seed_path) {
            continue;
        }
        for path in files(&dir.join(seed_path), &[".yml", ".yaml"]) {
            let file = relative(&path, dir);
            let (doc, text) = project::read_yaml(&path, &file)?;
            properties.add(&file, &doc, &text);
        }
    }
    let mut seeds: BTreeMap<String, PathBuf> = BTreeMap::new();
    for seed_path in &project.seed_paths {
        for path in files(&dir.join(seed_path), &[".csv"]) {
            let name = path
                .file_stem()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            match check_segment(&name) {
                Ok(()) => {
                    seeds.insert(name, path);
                }
                Err(e) => unconverted.push(Unconverted {
                    file: relative(&path, dir),
                    line: 1,
                    left_out: format!("seed {name}"),
                    reason: format!("its name cannot be a source name: {e}"),
                }),
            }
        }
    }
    // A dbt source whose table is one of the seeds (the seed loaded into the schema the source
    // names) reads that seed's data; any other has no data in the project.
    let mut sources: BTreeMap<(String, String), String> = BTreeMap::new();
    for s in &properties.sources {
        if seeds.contains_key(&s.identifier)
            && check_segment(&s.source).is_ok()
            && check_segment(&s.table).is_ok()
        {
            sources.insert(
                (s.source.clone(), s.table.clone()),
                format!("{}.{}", s.source, s.table),
            );
        }
    }
    let by_name: BTreeMap<&str, usize> = models
        .iter()
        .enumerate()
        .map(|(i, m)| (m.dbt_name.as_str(), i))
        .collect();
    let resolve_in = |reference: &Reference| -> Result<String, String> {
        match reference {
            Reference::Ref(name) => match (by_name.get(name.as_str()), seeds.contains_key(name)) {
                (Some(&i), _) => Ok(models[i].name.clone()),
                (None, true) => Ok(format!("seeds.{name}")),
                (None, false) => Err(format!(
                    "ref('{name}'): the project has no model or seed `{name}`"
                )),
            },
            Reference::Source(s, t) => {
                sources
                    .get(&(s.clone(), t.clone()))
                    .cloned()
                    .ok_or_else(|| {
                        format!(
                        "source('{s}', '{t}'): its data is in the warehouse, not in the project"
                    )
                    })
            }
        }
    };

    // Each model on its own.
    let mut converted: Vec<Converted> = Vec::new();
    let mut inert_settings: BTreeSet<(String, usize, String)> = BTreeSet::new();
    for (i, m) in models.iter().enumerate() {
        let mut reads = Vec::new();
        let c = jinja::convert(&m.text, &project.name, &project.vars, &mut |r| {
            let name = resolve_in(r)?;
            if let Reference::Ref(n) = r {
                if by_name.contains_key(n.as_str()) {
                    reads.push(n.clone());
                }
            }
            Ok(name)
        });
        let left_out = format!("model {}", m.dbt_name);
        if !c.problems.is_empty() {
            unconverted.extend(c.problems.into_iter().map(|p| Unconverted {
                file: m.file.clone(),
                line: p.line,
                left_out: left_out.clone(),
                reason: p.reason,
            }));
            continue;
        }
        let mut settings: Vec<(String, Literal, String, usize)> = project
            .folder_config(&m.dirs)
            .into_iter()
            .map(|(k, v, l)| (k, v, "dbt_project.yml".to_string(), l))
            .collect();
        if let Some(props) = properties.model(&m.dbt_name) {
            settings.extend(
                props
                    .config
                    .iter()
                    .map(|(k, v, l)| (k.clone(), v.clone(), props.file.clone(), *l)),
            );
        }
        settings.extend(
            c.config
                .iter()
                .map(|(k, v)| (k.clone(), v.clone(), m.file.clone(), c.config_line)),
        );
        match directives(&settings) {
            Ok((directives, materialization, unread)) => {
                inert_settings.extend(
                    unread
                        .into_iter()
                        .map(|(k, v, f, l)| (f, l, format!("{k}: {v}"))),
                );
                let lines: Vec<usize> = c
                    .references
                    .iter()
                    .filter_map(|(r, l)| {
                        matches!(r, Reference::Ref(n) if by_name.contains_key(n.as_str()))
                            .then_some(*l)
                    })
                    .collect();
                converted.push(Converted {
                    model: i,
                    sql: c.sql,
                    directives,
                    materialization,
                    reads: reads.into_iter().zip(lines).collect(),
                });
            }
            Err(mut u) => {
                u.left_out = left_out;
                unconverted.push(u);
            }
        }
    }
    // A setting no materialization reads, once where it is given (it may configure many).
    for (file, line, setting) in inert_settings {
        unconverted.push(Unconverted {
            file,
            line,
            left_out: format!("setting `{setting}`"),
            reason: "not a configuration of dbt's materializations: the models it configures are imported without it".into(),
        });
    }
    // A model that reads one left out is left out too, until nothing changes.
    loop {
        let kept: BTreeSet<&str> = converted
            .iter()
            .map(|c| models[c.model].dbt_name.as_str())
            .collect();
        let Some(pos) = converted
            .iter()
            .position(|c| c.reads.iter().any(|(r, _)| !kept.contains(r.as_str())))
        else {
            break;
        };
        let c = converted.remove(pos);
        let (read, line) = c
            .reads
            .iter()
            .find(|(r, _)| !kept.contains(r.as_str()))
            .expect("found above");
        unconverted.push(Unconverted {
            file: models[c.model].file.clone(),
            line: *line,
            left_out: format!("model {}", models[c.model].dbt_name),
            reason: format!("it reads `{read}`, which is left out"),
        });
    }
    let kept: BTreeMap<&str, usize> = converted
        .iter()
        .enumerate()
        .map(|(k, c)| (models[c.model].dbt_name.as_str(), k))
        .collect();
    let resolve_kept = |reference: &Reference| -> Result<String, String> {
        if let Reference::Ref(n) = reference {
            if by_name.contains_key(n.as_str()) && !kept.contains_key(n.as_str()) {
                return Err(format!("ref('{n}'): the model is left out"));
            }
        }
        resolve_in(reference)
    };

    // Descriptions, columns and tests.
    let mut toml_models = toml::Table::new();
    let mut test_files = TestFiles::default();
    let mut not_null: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    for c in &converted {
        let m = &models[c.model];
        let Some(props) = properties.model(&m.dbt_name) else {
            continue;
        };
        let mut section = toml::Table::new();
        if let Some(d) = &props.description {
            section.insert("description".into(), describe(d, &docs).into());
        }
        let mut columns = toml::Table::new();
        for col in &props.columns {
            let Some(d) = &col.description else { continue };
            if !names_column(&c.sql, &col.name) {
                unconverted.push(Unconverted {
                    file: props.file.clone(),
                    line: col.line,
                    left_out: format!("description of {}.{}", m.dbt_name, col.name),
                    reason: format!("the model's SQL never names the column `{}`", col.name),
                });
                continue;
            }
            let mut column = toml::Table::new();
            column.insert("description".into(), describe(d, &docs).into());
            columns.insert(col.name.to_lowercase(), column.into());
        }
        if !columns.is_empty() {
            section.insert("columns".into(), columns.into());
        }
        if !section.is_empty() {
            toml_models.insert(m.name.clone(), section.into());
        }
        let mut cols = Vec::new();
        let target = Target {
            name: &m.name,
            short: &m.dbt_name,
            sql: Some(&c.sql),
        };
        convert_tests(
            &target,
            &props.columns,
            &props.tests,
            &resolve_kept,
            &mut test_files,
            &mut cols,
            &mut unconverted,
        );
        not_null.insert(c.model, cols);
    }

    // Sources: the seeds by convention, the dbt sources over them in phlo.toml.
    let mut toml_sources = toml::Table::new();
    for s in &properties.sources {
        let Some(name) = sources.get(&(s.source.clone(), s.table.clone())) else {
            continue;
        };
        let mut section = toml::Table::new();
        section.insert(
            "location".into(),
            format!("sources/seeds/{}.csv", s.identifier).into(),
        );
        if let Some(d) = &s.description {
            section.insert("description".into(), describe(d, &docs).into());
        }
        toml_sources.insert(name.clone(), section.into());
        let mut source_not_null = Vec::new();
        let target = Target {
            name,
            short: &s.table,
            sql: None,
        };
        convert_tests(
            &target,
            &s.columns,
            &s.tests,
            &resolve_kept,
            &mut test_files,
            &mut source_not_null,
            &mut unconverted,
        );
        for c in source_not_null {
            test_files.add(
                format!("not_null_{}_{c}", s.table),
                format!("select {c}\nfrom {name} as t\nwhere {c} is null\n"),
                &TestSpec {
                    name: "not_null".into(),
                    args: Vec::new(),
                    file: s.file.clone(),
                    line: s.line,
                },
            );
        }
    }

    // The seeds' tests, against `seeds.<name>`; their settings (`column_types`, `delimiter`,
    // …) are not imported: the CSV source's columns are read as phlo-transform infers them.
    for (seed, props) in &properties.seeds {
        if !seeds.contains_key(seed) {
            continue;
        }
        for (key, value, line) in &props.config {
            unconverted.push(Unconverted {
                file: props.file.clone(),
                line: *line,
                left_out: format!("setting `{key}: {value}` of seed {seed}"),
                reason: "seed settings are not imported (the CSV source's columns are inferred)"
                    .into(),
            });
        }
        let name = format!("seeds.{seed}");
        let target = Target {
            name: &name,
            short: seed,
            sql: None,
        };
        let mut seed_not_null = Vec::new();
        convert_tests(
            &target,
            &props.columns,
            &props.tests,
            &resolve_kept,
            &mut test_files,
            &mut seed_not_null,
            &mut unconverted,
        );
        for c in seed_not_null {
            let line = props
                .columns
                .iter()
                .find(|col| col.name == c)
                .map_or(1, |col| col.line);
            test_files.add(
                format!("not_null_{seed}_{c}"),
                format!("select {c}\nfrom {name} as t\nwhere {c} is null\n"),
                &TestSpec {
                    name: "not_null".into(),
                    args: Vec::new(),
                    file: props.file.clone(),
                    line,
                },
            );
        }
    }

    // Singular tests.
    for test_path in &project.test_paths {
        for path in files(&dir.join(test_path), &[".sql"]) {
            let file = relative(&path, dir);
            let stem = path
                .file_stem()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            let c = jinja::convert(&text, &project.name, &project.vars, &mut |r| {
                resolve_kept(r)
            });
            if c.problems.is_empty() && c.config.is_empty() {
                let origin = TestSpec {
                    name: stem.clone(),
                    args: Vec::new(),
                    file,
                    line: 1,
                };
                test_files.add(stem, c.sql, &origin);
            } else {
                let reason = c
                    .problems
                    .first()
                    .map(|p| (p.line, p.reason.clone()))
                    .unwrap_or((c.config_line, "`config()` in a data test".into()));
                unconverted.push(Unconverted {
                    file,
                    line: reason.0,
                    left_out: format!("test {stem}"),
                    reason: reason.1,
                });
            }
        }
    }

    // Macros are not imported; the models calling them are listed where they call them.
    for macro_path in &project.macro_paths {
        for path in files(&dir.join(macro_path), &[".sql"]) {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            for (i, line) in text.lines().enumerate() {
                let Some(rest) = line.trim_start().strip_prefix("{%") else {
                    continue;
                };
                let rest = rest.trim_start_matches('-').trim_start();
                let Some(def) = rest.strip_prefix("macro ") else {
                    continue;
                };
                let name = def.split('(').next().unwrap_or(def).trim();
                unconverted.push(Unconverted {
                    file: relative(&path, dir),
                    line: i + 1,
                    left_out: format!("macro {name}"),
                    reason: "macros are not imported".into(),
                });
            }
        }
    }

    // The files of the new workspace.
    let mut written: Vec<(String, Vec<u8>)> = Vec::new();
    let mut phlo = toml::Table::new();
    let mut transform = toml::Table::new();
    if let Some(dialect) = profile_dialect(dir, project.profile.as_deref()) {
        transform.insert("dialect".into(), dialect.into());
    }
    if !transform.is_empty() {
        phlo.insert("transform".into(), transform.into());
    }
    if !toml_sources.is_empty() {
        phlo.insert("source".into(), toml_sources.into());
    }
    if !toml_models.is_empty() {
        phlo.insert("model".into(), toml_models.into());
    }
    let body = toml::to_string(&phlo).expect("a table serialises");
    written.push((
        "phlo.toml".into(),
        format!(
            "# Imported from the dbt project `{}` by `phlo-transform import dbt`.\n{body}",
            project.name
        )
        .into_bytes(),
    ));
    written.push((".gitignore".into(), b".phlo/\n".to_vec()));
    let mut report_models = Vec::new();
    for c in &converted {
        let m = &models[c.model];
        let mut header = format!(
            "-- Imported from dbt: {} (model `{}`)\n",
            m.file, m.dbt_name
        );
        for d in &c.directives {
            header.push_str(&format!("-- {d}\n"));
        }
        if let Some(cols) = not_null.get(&c.model).filter(|c| !c.is_empty()) {
            header.push_str(&format!("-- @not-null {}\n", cols.join(",")));
        }
        let mut path = format!("transforms/{}", project.name);
        for d in &m.dirs {
            path.push('/');
            path.push_str(d);
        }
        path.push_str(&format!("/{}.sql", m.dbt_name));
        let sql = c.sql.trim_start_matches(['\n', '\r']);
        written.push((path.clone(), format!("{header}{sql}").into_bytes()));
        report_models.push(ImportedModel {
            dbt_name: m.dbt_name.clone(),
            name: m.name.clone(),
            path,
            materialization: c.materialization.clone(),
        });
    }
    let mut report_sources = Vec::new();
    for (name, path) in &seeds {
        let bytes = std::fs::read(path).map_err(|e| {
            Diagnostic::error(
                codes::DBT_PROJECT_UNREADABLE,
                format!("cannot read {}: {e}", relative(path, dir)),
            )
            .in_file(relative(path, dir))
            .with_help("check the file's permissions")
        })?;
        written.push((format!("sources/seeds/{name}.csv"), bytes));
        report_sources.push(format!("seeds.{name}"));
    }
    report_sources.extend(sources.values().cloned());
    let mut report_tests = Vec::new();
    for (name, sql) in test_files.0 {
        let path = format!("tests/{name}.sql");
        report_tests.push(path.clone());
        written.push((path, sql.into_bytes()));
    }
    let mut files_written = Vec::new();
    for (rel, bytes) in &written {
        let path = out.join(rel);
        write_new(&path, bytes).map_err(|e| {
            let d = Diagnostic::error(codes::IMPORT_WRITE_FAILED, format!("cannot write {}: {e}", path.display()))
                .in_file(path.display().to_string())
                .with_help("check the directory's permissions and free space, then import again into an empty directory");
            files_written.iter().fold(d, |d, w: &String| d.with_note(format!("already written: {w}")))
        })?;
        files_written.push(rel.clone());
    }
    unconverted.sort();
    let diagnostics = unconverted.iter().map(Unconverted::diagnostic).collect();
    Ok(Imported {
        report: ImportReport {
            project: project.name,
            root: shown,
            models: report_models,
            sources: report_sources,
            tests: report_tests,
            files: files_written,
            unconverted,
        },
        diagnostics,
    })
}

#[cfg(test)]
mod import_tests {
    use super::*;

    fn write(root: &Path, rel: &str, text: &str) {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    /// A project with what jaffle_shop_duckdb does not have: a source over a seed, an
    /// incremental model configured in SQL, folder settings with `+`, a Python model, a
    /// macro and its call, a model reading a model left out, and a relationship to it.
    #[test]
    fn every_kind_of_construct_is_converted_or_listed() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("project");
        write(&p, "dbt_project.yml", "name: shop\nprofile: shop\nmodels:\n  shop:\n    +tags: ['core']\n    marts:\n      +materialized: table\n");
        write(
            &p,
            "profiles.yml",
            "shop:\n  target: dev\n  outputs:\n    dev:\n      type: postgres\n",
        );
        write(&p, "seeds/raw_orders.csv", "id,amount\n1,10\n2,20\n");
        write(&p, "models/sources.yml", "version: 2\nsources:\n  - name: raw\n    tables:\n      - name: orders\n        identifier: raw_orders\n        description: Orders as loaded\n        columns:\n          - name: id\n            tests: [not_null]\n");
        write(&p, "models/staging/stg_orders.sql", "{{ config(materialized='incremental', unique_key='id', tags='hourly') }}\nselect id, amount from {{ source('raw', 'orders') }}\n");
        write(
            &p,
            "models/marts/big.sql",
            "select id, {{ cents('amount') }} as dollars from {{ ref('stg_orders') }}\n",
        );
        write(
            &p,
            "models/marts/bigger.sql",
            "select * from {{ ref('big') }}\n",
        );
        write(
            &p,
            "models/marts/totals.sql",
            "select id, sum(amount) as amount from {{ ref('stg_orders') }} group by id\n",
        );
        write(&p, "models/marts/schema.yml", "version: 2\nmodels:\n  - name: totals\n    columns:\n      - name: id\n        tests:\n          - relationships:\n              to: ref('big')\n              field: id\n          - dbt_utils.at_least_one\n");
        write(
            &p,
            "models/marts/score.py",
            "def model(dbt, session):\n    return None\n",
        );
        write(
            &p,
            "macros/cents.sql",
            "{% macro cents(column) %}{{ column }} / 100{% endmacro %}\n",
        );
        let out = tmp.path().join("ws");
        let imported = import(&p, &out).unwrap();
        let left = unconverted_lines(&imported);
        assert_eq!(
            left,
            [
                "macros/cents.sql:1 macro cents: macros are not imported",
                "models/marts/big.sql:1 model big: Jinja expression `{{ cents('amount') }}`",
                "models/marts/bigger.sql:1 model bigger: it reads `big`, which is left out",
                "models/marts/schema.yml:7 test relationships(totals.id): ref('big'): the model is left out",
                "models/marts/schema.yml:10 test dbt_utils.at_least_one(totals.id): test `dbt_utils.at_least_one` (only not_null, unique, accepted_values and relationships are converted)",
                "models/marts/score.py:1 model score: a Python model",
            ]
        );
        assert_eq!(imported.diagnostics.len(), left.len());
        let models: Vec<(&str, &str)> = imported
            .report
            .models
            .iter()
            .map(|m| (m.name.as_str(), m.materialization.as_str()))
            .collect();
        assert_eq!(
            models,
            [
                ("shop.marts.totals", "table"),
                ("shop.staging.stg_orders", "incremental")
            ]
        );
        let stg =
            std::fs::read_to_string(out.join("transforms/shop/staging/stg_orders.sql")).unwrap();
        assert_eq!(
            stg,
            "-- Imported from dbt: models/staging/stg_orders.sql (model `stg_orders`)\n\
             -- @incremental key=id\n-- @tags core,hourly\nselect id, amount from raw.orders\n"
        );
        let toml = std::fs::read_to_string(out.join("phlo.toml")).unwrap();
        assert!(toml.contains("dialect = \"postgres\""), "{toml}");
        assert!(
            toml.contains("[source.\"raw.orders\"]\nlocation = \"sources/seeds/raw_orders.csv\"\ndescription = \"Orders as loaded\""),
            "{toml}"
        );
        assert_eq!(imported.report.sources, ["seeds.raw_orders", "raw.orders"]);
        assert_eq!(imported.report.tests, ["tests/not_null_orders_id.sql"]);
        // The workspace it wrote loads.
        let ws = crate::Workspace::load(&out).unwrap();
        assert_eq!(ws.models.len(), 2);
        assert!(ws.diagnostics.0.is_empty(), "{:?}", ws.diagnostics);
    }

    /// The report's unconverted entries as `file:line what: why`.
    fn unconverted_lines(imported: &Imported) -> Vec<String> {
        imported
            .report
            .unconverted
            .iter()
            .map(|u| format!("{}:{} {}: {}", u.file, u.line, u.left_out, u.reason))
            .collect()
    }

    /// Seeds' YAML, settings no materialization reads, and one that changes what is written.
    #[test]
    fn seed_tests_convert_and_unread_settings_are_listed_once() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("project");
        write(&p, "dbt_project.yml", "name: shop\nvars:\n  floor: 5\n  shop:\n    floor: 7\nmodels:\n  +cluster_by: ['id']\n  shop:\n    +materialized: table\n");
        write(&p, "seeds/raw_orders.csv", "id,amount\n1,10\n");
        write(&p, "seeds/raw_items.csv", "id,order_id\n1,1\n");
        write(&p, "seeds/props.yml", "version: 2\nseeds:\n  - name: raw_orders\n    config:\n      column_types: {id: bigint}\n    columns:\n      - name: id\n        tests: [not_null, unique]\n  - name: raw_items\n    columns:\n      - name: order_id\n        tests:\n          - relationships:\n              to: ref('raw_orders')\n              field: id\n");
        write(&p, "models/a.sql", "select id from {{ ref('raw_orders') }} where amount > {{ var('floor') }}\n{% if is_incremental() %}and id > (select max(id) from {{ this }}){% endif %}\n");
        write(&p, "models/b.sql", "{{ config(materialized='incremental', unique_key='id', incremental_predicates=['x']) }}\nselect id from {{ ref('a') }}\n");
        let out = tmp.path().join("ws");
        let imported = import(&p, &out).unwrap();
        let left = unconverted_lines(&imported);
        assert_eq!(
            left,
            [
                "dbt_project.yml:7 setting `cluster_by: ['id']`: not a configuration of dbt's materializations: the models it configures are imported without it",
                "models/b.sql:1 model b: setting `incremental_predicates: ['x']`",
                "seeds/props.yml:5 setting `column_types: {id: 'bigint'}` of seed raw_orders: seed settings are not imported (the CSV source's columns are inferred)",
            ]
        );
        let a = std::fs::read_to_string(out.join("transforms/shop/a.sql")).unwrap();
        assert!(
            a.ends_with("-- @table\nselect id from seeds.raw_orders where amount > 7\n"),
            "{a}"
        );
        assert_eq!(
            imported.report.tests,
            [
                "tests/not_null_raw_orders_id.sql",
                "tests/relationships_raw_items_order_id.sql",
                "tests/unique_raw_orders_id.sql"
            ]
        );
        let rel = std::fs::read_to_string(out.join("tests/relationships_raw_items_order_id.sql"))
            .unwrap();
        assert!(
            rel.contains("from seeds.raw_items as child\nleft join seeds.raw_orders as parent on child.order_id = parent.id"),
            "{rel}"
        );
        let ws = crate::Workspace::load(&out).unwrap();
        assert!(ws.diagnostics.0.is_empty(), "{:?}", ws.diagnostics);
    }

    #[test]
    fn yaml_that_does_not_parse_is_p016_at_its_line_and_nothing_is_written() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("project");
        write(&p, "dbt_project.yml", "name: shop\n");
        write(
            &p,
            "models/bad.yml",
            "version: 2\nmodels:\n  - name: [unclosed\n",
        );
        let out = tmp.path().join("ws");
        let d = import(&p, &out).err().unwrap();
        assert_eq!(d.code, codes::DBT_PROJECT_UNREADABLE);
        assert_eq!(d.file.as_deref(), Some("models/bad.yml"));
        assert!(!out.exists());
    }
}
