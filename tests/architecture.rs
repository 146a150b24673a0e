//! The dependency picture of the code (issue 12): no module imports another in a cycle inside
//! any crate, and no crate depends on a crate above it in the layer order docs/architecture.md
//! documents. Both are read from the sources, so a new cycle or an upward edge fails here,
//! naming the modules (with the file and line of each import) or the crates.
//!
//! Modules are files (`src/a/b.rs` and `src/a/b/mod.rs` are `a::b`; an inline `mod tests {}`
//! belongs to its file). An edge is a `use` of, or a path into, another module: `crate::…`,
//! `super::…`, `self::…` and a child module's name. A `pub use` is a re-export, not an edge: a
//! path through it is followed to the module that defines the name, so `crate::Workspace`
//! reads as the module `Workspace` comes from, not as the crate root.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

#[test]
fn no_crate_has_a_module_cycle() {
    let mut problems = Vec::new();
    for krate in workspace_crates() {
        let graph = ModuleGraph::read(&krate.src, &krate.root_file);
        for cycle in graph.cycles() {
            problems.push(format!("{}: {}", krate.name, cycle));
        }
    }
    assert!(
        problems.is_empty(),
        "module cycles (a leaf module for the shared types breaks them):\n{}",
        problems.join("\n")
    );
}

#[test]
fn crate_edges_only_point_down_the_documented_layers() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let layers = documented_layers(&root.join("docs/architecture.md"));
    let position = |name: &str| layers.iter().position(|l| l == name);
    let mut problems = Vec::new();
    for krate in workspace_crates() {
        let Some(at) = position(&krate.name) else {
            problems.push(format!(
                "{} is not in docs/architecture.md's crate table: document its job and layer",
                krate.name
            ));
            continue;
        };
        for dep in workspace_dependencies(&krate.manifest) {
            match position(&dep) {
                Some(d) if d < at => {}
                Some(_) => problems.push(format!(
                    "{} depends on {dep}, which docs/architecture.md lists after it (an upward edge)",
                    krate.name
                )),
                None => problems.push(format!(
                    "{} depends on {dep}, which docs/architecture.md does not list",
                    krate.name
                )),
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// docs/architecture.md's "Must never depend on" column, term by term: a term naming crates is
/// checked against every dependency table of the crate's manifest; a term about what the code
/// touches is checked in its sources (comments aside). A term this test does not know fails,
/// so the column and the check cannot drift apart.
#[test]
fn no_crate_depends_on_what_its_row_forbids() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let limits = documented_limits(&root.join("docs/architecture.md"));
    let crates = workspace_crates();
    let workspace: Vec<String> = crates.iter().map(|k| k.name.clone()).collect();
    let mut problems = Vec::new();
    for krate in &crates {
        let Some(terms) = limits.get(&krate.name) else {
            continue; // the layer test reports a crate missing from the table
        };
        let deps = dependencies(&krate.manifest);
        for term in terms {
            match Forbidden::of(term, &workspace, &krate.name) {
                Some(Forbidden::Packages(packages)) => {
                    for dep in deps.iter().filter(|d| packages.contains(d)) {
                        problems.push(format!(
                            "{} depends on {dep}, which its row forbids (\"{term}\")",
                            krate.name
                        ));
                    }
                }
                Some(Forbidden::Code(what, found)) => {
                    for (file, line) in rust_files(&krate.src).iter().flat_map(|f| {
                        let code = blank_out_keeping(&std::fs::read_to_string(f).unwrap(), true);
                        found(&code).into_iter().map(move |l| (f.clone(), l))
                    }) {
                        problems.push(format!(
                            "{}: {}:{line} touches {what}, which its row forbids (\"{term}\")",
                            krate.name,
                            file.strip_prefix(root).unwrap_or(&file).display()
                        ));
                    }
                }
                None => problems.push(format!(
                    "{}: docs/architecture.md forbids \"{term}\", which this test cannot check: \
                     name crates (`phlo-transform-…`) or teach `Forbidden::of` the term",
                    krate.name
                )),
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Issue 38: which engine a command runs on is decided from `AdapterKind` and the engine's
/// driver (crates/phlo-transform-adapter/src/drivers/), never by comparing an engine's name as
/// a string. Outside the adapter crate, no code compares a string literal naming an engine;
/// the exceptions below compare other vocabularies that happen to share a word.
#[test]
fn no_engine_name_is_compared_as_a_string_outside_the_adapter_crate() {
    /// (file, why its literals are not engine names).
    const OTHER_VOCABULARIES: [(&str, &str); 3] = [
        (
            "crates/phlo-transform-core/src/secrets.rs",
            "URL schemes whose passwords are redacted",
        ),
        (
            "crates/phlo-transform-lakehouse/src/iceberg_state.rs",
            "the `local://` file system of an Iceberg location",
        ),
        (
            "crates/phlo-transform-sql/src/dialects.rs",
            "dialect names (dialects/*.toml), which a workspace sets without an adapter",
        ),
    ];
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut problems = Vec::new();
    for krate in workspace_crates() {
        if krate.name == "phlo-transform-adapter" {
            continue;
        }
        for file in rust_files(&krate.src) {
            let shown = file
                .strip_prefix(root)
                .unwrap_or(&file)
                .display()
                .to_string();
            if OTHER_VOCABULARIES.iter().any(|(f, _)| *f == shown) {
                continue;
            }
            let code = blank_out_keeping(&std::fs::read_to_string(&file).unwrap(), true);
            for (line, name) in engine_name_comparisons(&code) {
                problems.push(format!(
                    "{shown}:{line} compares the engine name \"{name}\" as a string: ask \
                     `AdapterTarget::kind()` / `Adapter::kind()` (an `AdapterKind`) or the \
                     engine's driver (`phlo_transform_adapter::driver`)"
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The comparison scanner itself: `==`, `!=`, match arms, `matches!` and `Some("…")` compared
/// are found; a name passed as an argument, in a comment or in a format string is not.
#[test]
fn the_engine_name_scanner_finds_comparisons_only() {
    let code = blank_out_keeping(
        concat!(
            "if kind == \"trino\" {}\n",
            "match k { \"local\" => 1, \"duckdb\" | \"postgres\" => 2, _ => 3 }\n",
            "let b = matches!(k, \"postgres\");\n",
            "let c = r.adapter.as_deref() == Some(\"trino\");\n",
            "let d = \"local\" != k;\n",
            "ws.adapter_target(Some(\"local\")); // kind == \"trino\"\n",
            "format!(\"local\"); let e = \"trino is fast\" == k;\n",
        ),
        true,
    );
    let found: Vec<(usize, String)> = engine_name_comparisons(&code);
    let lines: Vec<usize> = found.iter().map(|(l, _)| *l).collect();
    assert_eq!(lines, vec![1, 2, 2, 2, 3, 4, 5], "{found:?}");
}

/// The lines (1-based) and names of the engine-name string literals `code` (comments blanked,
/// strings kept) compares: `== "x"`, `"x" ==`, `!=` either way, `"x" =>`, `"x" |`, `| "x"`,
/// `matches!(…, "x")` and `== Some("x")`.
fn engine_name_comparisons(code: &str) -> Vec<(usize, String)> {
    const ENGINES: [&str; 4] = ["local", "duckdb", "postgres", "trino"];
    let mut out = Vec::new();
    for (n, line) in code.lines().enumerate() {
        for name in ENGINES {
            let literal = format!("\"{name}\"");
            for (at, _) in line.match_indices(&literal) {
                let before = line[..at].trim_end();
                let after = line[at + literal.len()..].trim_start();
                let before_some = before.strip_suffix("Some(").map(str::trim_end);
                let compared = ["==", "!="].iter().any(|op| {
                    before.ends_with(op)
                        || after.starts_with(op)
                        || before_some.is_some_and(|b| b.ends_with(op))
                }) || after.starts_with("=>")
                    || (after.starts_with('|') && !after.starts_with("||"))
                    || (before.ends_with('|') && !before.ends_with("||"))
                    || (before.ends_with(',') && before.contains("matches!("));
                if compared {
                    out.push((n + 1, name.to_string()));
                }
            }
        }
    }
    out
}

/// What a "Must never depend on" term forbids.
enum Forbidden {
    /// These packages, as dependencies.
    Packages(Vec<String>),
    /// Code that does this (a description, and the lines of a file's code that do it).
    Code(&'static str, fn(&str) -> Vec<usize>),
}

impl Forbidden {
    /// The meaning of `term` in the row of crate `own` (`workspace`: every package of the
    /// workspace); `None` for a term this test does not know.
    fn of(term: &str, workspace: &[String], own: &str) -> Option<Forbidden> {
        let packages = |names: &[&str]| {
            Some(Forbidden::Packages(
                names.iter().map(|n| n.to_string()).collect(),
            ))
        };
        // Engines: the adapter crate and the engines' own crates (the Iceberg crate is a table
        // format's metadata, which `lakehouse` reads, not an engine).
        const ENGINES: [&str; 5] = [
            "phlo-transform-adapter",
            "datafusion",
            "deltalake",
            "iceberg-datafusion",
            "duckdb",
        ];
        match term {
            "any other crate of the workspace" => Some(Forbidden::Packages(
                workspace.iter().filter(|w| *w != own).cloned().collect(),
            )),
            "any engine" | "engines" | "SQL engines" => packages(&ENGINES),
            "the compiler" => packages(&["phlo-transform-compiler"]),
            "state" => packages(&["phlo-transform-state"]),
            "adapters" => packages(&["phlo-transform-adapter"]),
            "workspaces" => packages(&["phlo-transform-project"]),
            "the planner" => packages(&["phlo-transform-plan"]),
            "the scheduler" => packages(&["phlo-transform-exec"]),
            "the CLI" => packages(&["phlo-transform"]),
            "the language server" => packages(&["phlo-transform-lsp", "lsp-server", "lsp-types"]),
            "SQL parsing" => packages(&["phlo-transform-sql", "sqlparser", "datafusion"]),
            "DataFusion's planner" => {
                Some(Forbidden::Code("DataFusion beyond its sqlparser", |code| {
                    lines_where(code, |l| {
                        l.match_indices("datafusion::")
                            .any(|(at, _)| !l[at..].starts_with("datafusion::sql::sqlparser"))
                    })
                }))
            }
            "files" => Some(Forbidden::Code("the file system", |code| {
                lines_where(code, |l| l.contains("std::fs") || l.contains("fs::"))
            })),
            "table formats' layouts" => Some(Forbidden::Code("a table format's layout", |code| {
                lines_where(code, |l| {
                    l.contains("\"_delta_log\"") || l.contains(".metadata.json\"")
                })
            })),
            "—" => Some(Forbidden::Packages(Vec::new())),
            _ => None,
        }
    }
}

/// The 1-based numbers of the lines of `code` for which `hit` holds.
fn lines_where(code: &str, hit: impl Fn(&str) -> bool) -> Vec<usize> {
    code.lines()
        .enumerate()
        .filter(|(_, l)| hit(l))
        .map(|(n, _)| n + 1)
        .collect()
}

/// Every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// Each crate of docs/architecture.md's table and the terms of its "Must never depend on"
/// column (split at `;` and `,`, each without its parenthesised remark).
fn documented_limits(doc: &Path) -> BTreeMap<String, Vec<String>> {
    let text = std::fs::read_to_string(doc).unwrap();
    let section = text
        .split("\n## ")
        .find(|s| s.starts_with("Crates, their jobs and their limits"))
        .expect("docs/architecture.md has the section `Crates, their jobs and their limits`");
    section
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| {
            let name = l.split('`').next()?;
            let column = l.trim_end().trim_end_matches('|').rsplit('|').next()?;
            // A remark in parentheses explains a term: `adapters (it never runs a query)`.
            let terms = column
                .split([';', ','])
                .map(|t| t.split(" (").next().unwrap_or(t).trim().to_string())
                .filter(|t| !t.is_empty())
                .collect();
            name.starts_with("phlo-transform")
                .then(|| (name.to_string(), terms))
        })
        .collect()
}

/// The scanner itself: a cycle through a re-export, `super::`, a use tree and a child module's
/// name is found; comments, strings and an inline test module's `super::*` are not edges.
#[test]
fn the_scanner_finds_cycles_and_ignores_what_is_not_an_import() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    let write = |path: &str, text: &str| {
        let path = src.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write(
        "lib.rs",
        "mod a;\nmod b;\nmod c;\npub use a::{Thing,};\n// crate::c::x in a comment\n",
    );
    write(
        "a.rs",
        "use crate::{b::{self, Other}, c,};\npub struct Thing;\n#[cfg(test)]\nmod tests {\n    use super::*;\n}\n",
    );
    write(
        "b.rs",
        "mod inner;\npub struct Other;\nfn f() { inner::g() }\n",
    );
    write(
        "b/inner.rs",
        "pub fn g() { let _ = \"crate::a\"; let _: super::super::Thing; }\n",
    );
    write("c.rs", "pub fn x() {}\n");
    let graph = ModuleGraph::read(src, "lib.rs");
    let cycles = graph.cycles();
    assert_eq!(cycles.len(), 1, "{cycles:?}");
    assert!(
        cycles[0].starts_with("a → b → b::inner → a"),
        "{}",
        cycles[0]
    );
    // Without the path back (the `Thing` re-export read as the root): no cycle.
    write("b/inner.rs", "pub fn g() { let _ = \"crate::a\"; }\n");
    assert_eq!(
        ModuleGraph::read(src, "lib.rs").cycles(),
        Vec::<String>::new()
    );
}

struct Crate {
    name: String,
    manifest: PathBuf,
    src: PathBuf,
    root_file: String,
}

/// Every package of the workspace: the crates under `crates/` and the binary at the root.
fn workspace_crates() -> Vec<Crate> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut crates = vec![Crate {
        name: package_name(&root.join("Cargo.toml")),
        manifest: root.join("Cargo.toml"),
        src: root.join("src"),
        root_file: "main.rs".into(),
    }];
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root.join("crates"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("Cargo.toml").is_file())
        .collect();
    dirs.sort();
    for dir in dirs {
        crates.push(Crate {
            name: package_name(&dir.join("Cargo.toml")),
            manifest: dir.join("Cargo.toml"),
            src: dir.join("src"),
            root_file: "lib.rs".into(),
        });
    }
    crates
}

/// `name = "…"` of a manifest's `[package]`.
fn package_name(manifest: &Path) -> String {
    let text = std::fs::read_to_string(manifest).unwrap();
    let mut in_package = false;
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            in_package = line == "[package]";
        } else if in_package {
            if let Some(value) = line.strip_prefix("name") {
                let value = value.trim_start().trim_start_matches('=').trim();
                return value.trim_matches('"').to_string();
            }
        }
    }
    panic!("{}: no [package] name", manifest.display())
}

/// The workspace crates (`phlo-transform-*`) a manifest depends on, in any dependency table
/// (normal, build, dev, per target).
fn workspace_dependencies(manifest: &Path) -> BTreeSet<String> {
    dependencies(manifest)
        .into_iter()
        .filter(|d| d.starts_with("phlo-transform"))
        .collect()
}

/// Every package a manifest depends on, in any dependency table (normal, build, dev, per
/// target).
fn dependencies(manifest: &Path) -> BTreeSet<String> {
    let text = std::fs::read_to_string(manifest).unwrap();
    let mut in_dependencies = false;
    let mut out = BTreeSet::new();
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            in_dependencies = line
                .trim_matches(|c| c == '[' || c == ']')
                .ends_with("dependencies");
            continue;
        }
        if !in_dependencies || line.starts_with('#') {
            continue;
        }
        let key: String = line
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
            .collect();
        if !key.is_empty() {
            out.insert(key);
        }
    }
    out
}

/// The crates of docs/architecture.md's table, top (lowest layer) to bottom.
fn documented_layers(doc: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(doc).unwrap();
    let section = text
        .split("\n## ")
        .find(|s| s.starts_with("Crates, their jobs and their limits"))
        .expect("docs/architecture.md has the section `Crates, their jobs and their limits`");
    let layers: Vec<String> = section
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split('`').next())
        .filter(|name| name.starts_with("phlo-transform"))
        .map(str::to_string)
        .collect();
    assert!(layers.len() > 3, "the crate table lists {layers:?}");
    layers
}

/// The module graph of one crate: its files, and which imports which (with where).
struct ModuleGraph {
    /// Module path (`a::b`, the root is empty) of each file.
    files: BTreeMap<String, PathBuf>,
    /// Edges: importer → imported → the first place it is imported (file:line).
    edges: BTreeMap<String, BTreeMap<String, String>>,
}

/// What one file says: its imports and its re-exports.
#[derive(Default)]
struct FileScan {
    /// (module the path is written in, path segments, line): uses and paths in code.
    paths: Vec<(String, Vec<String>, usize)>,
    /// (module, name, path it stands for, line): `pub use` re-exports.
    reexports: Vec<(String, String, Vec<String>, usize)>,
    /// Inline modules (`mod tests { … }`) by path, as belonging to this file.
    inline: Vec<String>,
}

impl ModuleGraph {
    fn read(src: &Path, root_file: &str) -> Self {
        let mut files = BTreeMap::new();
        collect_files(src, src, root_file, &mut files);
        let mut scans = BTreeMap::new();
        for (module, path) in &files {
            let text = std::fs::read_to_string(path).unwrap();
            scans.insert(module.clone(), scan(&blank_out(&text), module));
        }
        // Every module path (inline ones too) → the file module it belongs to.
        let mut owner: BTreeMap<String, String> =
            files.keys().map(|m| (m.clone(), m.clone())).collect();
        let mut reexports: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
        for (file, s) in &scans {
            for inline in &s.inline {
                owner.entry(inline.clone()).or_insert_with(|| file.clone());
            }
            for (module, name, path, _) in &s.reexports {
                reexports.insert((module.clone(), name.clone()), path.clone());
            }
        }
        let mut edges: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
        for (file, s) in &scans {
            for (module, path, line) in &s.paths {
                let Some(target) = resolve(module, path, &owner, &reexports, 0) else {
                    continue;
                };
                if target != *file {
                    let shown = files[file].strip_prefix(env!("CARGO_MANIFEST_DIR"));
                    let at = format!("{}:{line}", shown.unwrap_or(&files[file]).display());
                    edges
                        .entry(file.clone())
                        .or_default()
                        .entry(target)
                        .or_insert(at);
                }
            }
        }
        ModuleGraph { files, edges }
    }

    /// Each cycle (a strongly connected set of modules) as one loop through it, with where
    /// each import is, then the other modules of the set.
    fn cycles(&self) -> Vec<String> {
        let mut out = Vec::new();
        for component in self.strongly_connected() {
            if component.len() < 2 {
                continue;
            }
            let first = component.iter().next().unwrap();
            let path = self.loop_through(first, &component);
            let mut text = path
                .iter()
                .map(|m| display(m))
                .collect::<Vec<_>>()
                .join(" → ");
            let places: Vec<String> = path
                .windows(2)
                .map(|w| {
                    format!(
                        "{} imports {} at {}",
                        display(&w[0]),
                        display(&w[1]),
                        self.edges[&w[0]][&w[1]]
                    )
                })
                .collect();
            text.push_str(&format!(" ({})", places.join("; ")));
            let rest: Vec<&str> = component
                .iter()
                .filter(|m| !path.contains(m))
                .map(|m| display(m))
                .collect();
            if !rest.is_empty() {
                text.push_str(&format!("; also in the cycle: {}", rest.join(", ")));
            }
            out.push(text);
        }
        out
    }

    fn successors<'a>(&'a self, m: &str) -> impl Iterator<Item = &'a String> {
        self.edges.get(m).into_iter().flat_map(|e| e.keys())
    }

    /// Tarjan's algorithm over the files.
    fn strongly_connected(&self) -> Vec<BTreeSet<String>> {
        struct State<'a> {
            index: BTreeMap<&'a str, usize>,
            low: BTreeMap<&'a str, usize>,
            stack: Vec<&'a str>,
            on_stack: BTreeSet<&'a str>,
            out: Vec<BTreeSet<String>>,
        }
        fn visit<'a>(g: &'a ModuleGraph, v: &'a str, s: &mut State<'a>) {
            let n = s.index.len();
            s.index.insert(v, n);
            s.low.insert(v, n);
            s.stack.push(v);
            s.on_stack.insert(v);
            for w in g.successors(v) {
                if !s.index.contains_key(w.as_str()) {
                    visit(g, w, s);
                    let low = s.low[v].min(s.low[w.as_str()]);
                    s.low.insert(v, low);
                } else if s.on_stack.contains(w.as_str()) {
                    let low = s.low[v].min(s.index[w.as_str()]);
                    s.low.insert(v, low);
                }
            }
            if s.low[v] == s.index[v] {
                let mut component = BTreeSet::new();
                while let Some(w) = s.stack.pop() {
                    s.on_stack.remove(w);
                    component.insert(w.to_string());
                    if w == v {
                        break;
                    }
                }
                s.out.push(component);
            }
        }
        let mut s = State {
            index: BTreeMap::new(),
            low: BTreeMap::new(),
            stack: Vec::new(),
            on_stack: BTreeSet::new(),
            out: Vec::new(),
        };
        for m in self.files.keys() {
            if !s.index.contains_key(m.as_str()) {
                visit(self, m, &mut s);
            }
        }
        s.out
    }

    /// The shortest loop from `start` back to itself inside `component` (breadth first).
    fn loop_through(&self, start: &str, component: &BTreeSet<String>) -> Vec<String> {
        let mut previous: BTreeMap<String, String> = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([start.to_string()]);
        while let Some(m) = queue.pop_front() {
            for next in self.successors(&m).filter(|n| component.contains(*n)) {
                if next == start {
                    // m, its parent, …, start: reversed, and back to start.
                    let mut path = vec![m.clone()];
                    while let Some(p) = previous.get(path.last().unwrap()) {
                        path.push(p.clone());
                    }
                    path.reverse();
                    path.push(start.to_string());
                    return path;
                }
                if next != start && !previous.contains_key(next) {
                    previous.insert(next.clone(), m.clone());
                    queue.push_back(next.clone());
                }
            }
        }
        unreachable!("a strongly connected component of two or more has a loop")
    }
}

/// The crate root reads as `crate`.
fn display(module: &str) -> &str {
    if module.is_empty() {
        "crate"
    } else {
        module
    }
}

/// `src/a/b.rs` and `src/a/b/mod.rs` → `a::b`; the root file → ``.
fn collect_files(src: &Path, dir: &Path, root_file: &str, out: &mut BTreeMap<String, PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            collect_files(src, &path, root_file, out);
            continue;
        }
        if path.extension().and_then(|e| e.to_str()) != Some("rs") {
            continue;
        }
        let relative = path.strip_prefix(src).unwrap().with_extension("");
        let mut segments: Vec<String> = relative
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if relative == Path::new(root_file).with_extension("") {
            segments.clear();
        } else if segments.last().map(String::as_str) == Some("mod") {
            segments.pop();
        }
        out.insert(segments.join("::"), path);
    }
}

/// The file module (the key of `owner`) `path`, written in `module`, leads to; `None` for a
/// path outside the crate (`std::…`, another crate).
fn resolve(
    module: &str,
    path: &[String],
    owner: &BTreeMap<String, String>,
    reexports: &BTreeMap<(String, String), Vec<String>>,
    depth: usize,
) -> Option<String> {
    let absolute = absolute(module, path, owner)?;
    // The longest prefix that is a module; the name after it may be one of its re-exports.
    let (len, found) = (0..=absolute.len()).rev().find_map(|n| {
        owner
            .get(&absolute[..n].join("::"))
            .map(|_| (n, absolute[..n].join("::")))
    })?;
    if let Some(next) = absolute.get(len) {
        if let Some(target) = reexports.get(&(found.clone(), next.clone())) {
            if depth < 8 {
                let mut followed = target.clone();
                followed.extend(absolute[len + 1..].iter().cloned());
                return resolve(&found, &followed, owner, reexports, depth + 1);
            }
        }
    }
    Some(owner[&found].clone())
}

/// `path` written in `module` as segments from the crate root; `None` when it starts outside
/// the crate.
fn absolute(
    module: &str,
    path: &[String],
    owner: &BTreeMap<String, String>,
) -> Option<Vec<String>> {
    let mut base: Vec<String> = if module.is_empty() {
        Vec::new()
    } else {
        module.split("::").map(str::to_string).collect()
    };
    let mut rest = path;
    match rest.first().map(String::as_str) {
        Some("crate") => {
            base.clear();
            rest = &rest[1..];
        }
        Some("self") => rest = &rest[1..],
        Some("super") => {
            while rest.first().map(String::as_str) == Some("super") {
                base.pop()?;
                rest = &rest[1..];
            }
        }
        // A child module of the one the path is written in.
        Some(first) => {
            let mut child = base.clone();
            child.push(first.to_string());
            if !owner.contains_key(&child.join("::")) {
                return None;
            }
        }
        None => return None,
    }
    base.extend(rest.iter().cloned());
    Some(base)
}

/// `text` with comments, strings and character literals blanked out (newlines kept), so that
/// only code is scanned.
fn blank_out(text: &str) -> String {
    blank_out_keeping(text, false)
}

/// `text` with comments blanked out (newlines kept), and raw strings and character literals;
/// plain string literals (`"…"`) are kept when `keep_strings`, else blanked too.
fn blank_out_keeping(text: &str, keep_strings: bool) -> String {
    let b: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < b.len() && b[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == '/' && b.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if b[i] == '*' && b.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(b[i]));
                    i += 1;
                }
            }
        } else if (c == 'r' || (c == 'b' && next == Some('r')))
            && !b
                .get(i.wrapping_sub(1))
                .is_some_and(|p| p.is_alphanumeric() || *p == '_')
            && {
                let mut j = i + if c == 'b' { 2 } else { 1 };
                while b.get(j) == Some(&'#') {
                    j += 1;
                }
                b.get(j) == Some(&'"')
            }
        {
            // A raw string: r"…", r#"…"#, br"…".
            let mut j = i + if c == 'b' { 2 } else { 1 };
            let mut hashes = 0;
            while b[j] == '#' {
                hashes += 1;
                j += 1;
            }
            j += 1;
            while j < b.len() {
                if b[j] == '"' && (0..hashes).all(|h| b.get(j + 1 + h) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            out.extend(b[i..j.min(b.len())].iter().map(|&c| blank(c)));
            i = j;
        } else if c == '"' {
            let keep = |c: char| if keep_strings { c } else { blank(c) };
            out.push(keep('"'));
            i += 1;
            while i < b.len() && b[i] != '"' {
                if b[i] == '\\' {
                    out.push(keep('\\'));
                    i += 1;
                }
                if i < b.len() {
                    out.push(keep(b[i]));
                    i += 1;
                }
            }
            out.push(keep('"'));
            i += 1;
        } else if c == '\'' {
            // A character literal ('x', '\n', '\u{…}'), not a lifetime ('a).
            let end = if next == Some('\\') {
                (i + 2..b.len()).find(|&j| b[j] == '\'')
            } else if b.get(i + 2) == Some(&'\'') {
                Some(i + 2)
            } else {
                None
            };
            match end {
                Some(end) => {
                    out.extend(std::iter::repeat_n(' ', end + 1 - i));
                    i = end + 1;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

#[derive(Clone, Debug, PartialEq)]
enum Token {
    Ident(String),
    PathSep,
    Punct(char),
}

/// Identifiers, `::` and single punctuation, each with its line.
fn tokens(code: &str) -> Vec<(Token, usize)> {
    let chars: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut line = 1;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push((Token::Ident(chars[start..i].iter().collect()), line));
        } else if c == ':' && chars.get(i + 1) == Some(&':') {
            out.push((Token::PathSep, line));
            i += 2;
        } else {
            out.push((Token::Punct(c), line));
            i += 1;
        }
    }
    out
}

/// The imports, paths and re-exports of one file whose module is `file_module`.
fn scan(code: &str, file_module: &str) -> FileScan {
    let toks = tokens(code);
    let mut s = FileScan::default();
    // Inline modules open at a brace depth: (depth, module path).
    let mut inline: Vec<(usize, String)> = Vec::new();
    let mut depth = 0;
    let current = |inline: &[(usize, String)]| {
        inline
            .last()
            .map_or(file_module.to_string(), |(_, m)| m.clone())
    };
    let ident = |i: usize| match toks.get(i) {
        Some((Token::Ident(name), _)) => Some(name.as_str()),
        _ => None,
    };
    let mut i = 0;
    while i < toks.len() {
        match &toks[i].0 {
            Token::Punct('{') => {
                depth += 1;
                i += 1;
            }
            Token::Punct('}') => {
                if inline.last().is_some_and(|(d, _)| *d == depth) {
                    inline.pop();
                }
                depth -= 1;
                i += 1;
            }
            Token::Ident(word) if word == "mod" => {
                if let (Some(name), Some((Token::Punct('{'), _))) = (ident(i + 1), toks.get(i + 2))
                {
                    let module = current(&inline);
                    let path = if module.is_empty() {
                        name.to_string()
                    } else {
                        format!("{module}::{name}")
                    };
                    s.inline.push(path.clone());
                    depth += 1;
                    inline.push((depth, path));
                    i += 3;
                } else {
                    i += 1;
                }
            }
            Token::Ident(word) if word == "use" => {
                let public = i > 0
                    && (ident(i - 1) == Some("pub") || matches!(toks[i - 1].0, Token::Punct(')')));
                let end = (i..toks.len())
                    .find(|&j| toks[j].0 == Token::Punct(';'))
                    .unwrap_or(toks.len());
                let module = current(&inline);
                let line = toks[i].1;
                for (path, name) in use_tree(&toks[i + 1..end]) {
                    if path.last().map(String::as_str) == Some("*") {
                        // A glob: the module it reads from is the dependency.
                        let module_path = path[..path.len() - 1].to_vec();
                        if !public {
                            s.paths.push((module.clone(), module_path, line));
                        }
                        continue;
                    }
                    if public {
                        s.reexports.push((module.clone(), name, path, line));
                    } else {
                        s.paths.push((module.clone(), path, line));
                    }
                }
                i = end + 1;
            }
            Token::Ident(first) => {
                // A path in code: `a::b::c` (generics and turbofish end it).
                let mut path = vec![first.clone()];
                let mut j = i + 1;
                while toks.get(j).map(|t| &t.0) == Some(&Token::PathSep) {
                    match ident(j + 1) {
                        Some(next) => path.push(next.to_string()),
                        None => break,
                    }
                    j += 2;
                }
                let preceded_by_path = i > 0 && toks[i - 1].0 == Token::PathSep;
                if path.len() > 1 && !preceded_by_path {
                    s.paths.push((current(&inline), path, toks[i].1));
                }
                i = j.max(i + 1);
            }
            _ => i += 1,
        }
    }
    // A re-exported name the file's own code uses is an import of it as well.
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for (t, _) in &toks {
        if let Token::Ident(name) = t {
            *seen.entry(name.as_str()).or_default() += 1;
        }
    }
    for (module, name, path, line) in &s.reexports {
        if seen.get(name.as_str()).copied().unwrap_or(0) > 1 {
            s.paths.push((module.clone(), path.clone(), *line));
        }
    }
    s
}

/// The paths a use tree names, each with the name it binds: `a::{b, c::{self, D as E}}` →
/// `a::b` (b), `a::c` (c), `a::c::D` (E).
fn use_tree(toks: &[(Token, usize)]) -> Vec<(Vec<String>, String)> {
    fn walk(
        toks: &[(Token, usize)],
        i: &mut usize,
        prefix: Vec<String>,
        out: &mut Vec<(Vec<String>, String)>,
    ) {
        let base = prefix.len();
        let mut path = prefix;
        while *i < toks.len() {
            match &toks[*i].0 {
                Token::Ident(word) if word == "as" => {
                    *i += 1;
                    if let Some((Token::Ident(alias), _)) = toks.get(*i) {
                        out.push((path.clone(), alias.clone()));
                        path.clear();
                    }
                    *i += 1;
                }
                Token::Ident(word) if word == "self" && !path.is_empty() => {
                    let name = path.last().cloned().unwrap_or_default();
                    out.push((path.clone(), name));
                    path.clear();
                    *i += 1;
                }
                Token::Ident(word) => {
                    path.push(word.clone());
                    *i += 1;
                }
                Token::Punct('*') => {
                    path.push("*".into());
                    out.push((path.clone(), String::new()));
                    path.clear();
                    *i += 1;
                }
                Token::PathSep => *i += 1,
                Token::Punct('{') => {
                    *i += 1;
                    let base = path.clone();
                    loop {
                        walk(toks, i, base.clone(), out);
                        match toks.get(*i).map(|t| &t.0) {
                            Some(Token::Punct(',')) => *i += 1,
                            _ => break,
                        }
                    }
                    *i += 1; // `}`
                    path.clear();
                }
                Token::Punct(',') | Token::Punct('}') => break,
                _ => *i += 1,
            }
        }
        // Only a path that went past the prefix names something (`a::{b, }` names no `a`).
        if path.len() > base {
            out.push((path.clone(), path.last().cloned().unwrap_or_default()));
        }
    }
    let mut out = Vec::new();
    let mut i = 0;
    // A leading `::` (an extern crate path) or visibility is not part of the tree.
    walk(toks, &mut i, Vec::new(), &mut out);
    out.retain(|(path, _)| !path.is_empty());
    out
}
