//! The compile cache (issue 17): a warm compile gives exactly what a cold one gives, an edit
//! recomputes only the edited model and the readers whose inputs' schemas changed, and a
//! damaged cache is ignored and rewritten. Asserted on the compile's cache counters and on
//! every output, never on time.

#[path = "../../../benches/support/generate.rs"]
#[allow(dead_code)] // the loaders the benches use
mod generate;

use phlo_transform_compiler::{CatalogSnapshot, Compilation, CompileCache};
use phlo_transform_project::Workspace;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn testdata(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata")
        .join(name)
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

fn compile(dir: &Path, cache: &CompileCache) -> Compilation {
    let ws = Workspace::load(dir).expect("workspace loads");
    let (catalog, diags) = CatalogSnapshot::load(&ws);
    Compilation::compile_cached(ws, catalog, diags, cache)
}

/// Everything a compile gives that commands show or write: diagnostics, every model (schema,
/// fingerprints, version, lineage, relations), the tests, and the artifacts serialised.
fn outputs(c: &Compilation) -> BTreeMap<&'static str, String> {
    let tests: Vec<String> = c
        .tests
        .iter()
        .map(|t| format!("{} {:?} {:?} {}", t.name, t.kind, t.targets, t.query))
        .collect();
    BTreeMap::from([
        ("diagnostics", format!("{:#?}", c.diagnostics)),
        ("models", format!("{:#?}", c.models)),
        ("order", format!("{:?}", c.order)),
        ("tests", tests.join("\n")),
        (
            "manifest.json",
            serde_json::to_string(&c.manifest()).unwrap(),
        ),
        (
            "graph.json",
            serde_json::to_string(&c.graph_document()).unwrap(),
        ),
        (
            "lineage.json",
            serde_json::to_string(&c.lineage().document()).unwrap(),
        ),
        ("lineage stamp", c.lineage_stamp("test")),
    ])
}

fn assert_same(label: &str, a: &Compilation, b: &Compilation) {
    let (a, b) = (outputs(a), outputs(b));
    for (what, text) in &a {
        assert!(
            text == &b[what],
            "{label}: {what} differs between the compiles"
        );
    }
}

fn names(c: &Compilation, indices: &[usize]) -> Vec<String> {
    indices
        .iter()
        .map(|&i| c.models[i].name.to_string())
        .collect()
}

/// Fixtures with every kind of model: each plan-node type for lineage, TPC-H, type and
/// resolution errors, a target dialect, and 150 realistic generated models.
fn fixtures(root: &Path) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for name in [
        "lineage",
        "tpch",
        "errors/type_errors",
        "errors/coercion_errors",
        "errors/unresolved_relation",
        "errors/syntax_error",
        "dialects/duckdb",
    ] {
        let dir = root.join(name.replace('/', "_"));
        copy_dir(&testdata(name), &dir);
        dirs.push(dir);
    }
    let realistic = root.join("realistic");
    std::fs::create_dir_all(&realistic).unwrap();
    generate::realistic::generate(&realistic, 150).unwrap();
    dirs.push(realistic);
    dirs
}

#[test]
fn a_warm_compile_is_identical_to_a_cold_one() {
    let tmp = tempfile::tempdir().unwrap();
    for dir in fixtures(tmp.path()) {
        let label = dir.file_name().unwrap().to_string_lossy().to_string();
        let cache = CompileCache::at(dir.join(".phlo/cache/compile"));
        let uncached = compile(&dir, &CompileCache::disabled());
        let cold = compile(&dir, &cache);
        let warm = compile(&dir, &cache);
        assert_same(&format!("{label} cold"), &uncached, &cold);
        assert_same(&format!("{label} warm"), &cold, &warm);

        assert_eq!(cold.cache_stats.parse_hits, 0, "{label}");
        assert_eq!(cold.cache_stats.type_hits, 0, "{label}");
        // Warm: every model that parsed and typed comes from the cache; only failures
        // (never stored) are computed again.
        let parsed = cold.models.iter().filter(|m| m.sql.is_some()).count();
        let typed = cold
            .models
            .iter()
            .filter(|m| m.plan_fingerprint.is_some())
            .count();
        assert!(
            typed > 0 || label.starts_with("errors"),
            "{label}: nothing typed"
        );
        assert_eq!(warm.cache_stats.parse_hits, parsed, "{label}");
        assert_eq!(warm.cache_stats.type_hits, typed, "{label}");
        let failed_typing: Vec<usize> = cold
            .cache_stats
            .typed
            .iter()
            .copied()
            .filter(|&i| cold.models[i].plan_fingerprint.is_none())
            .collect();
        assert_eq!(warm.cache_stats.typed, failed_typing, "{label}");
        if label == "realistic" || label == "lineage" {
            assert!(warm.cache_stats.parsed.is_empty(), "{label}");
            assert!(warm.cache_stats.typed.is_empty(), "{label}");
        }
    }
}

const SOURCES: &str = r#"
[source."raw.orders".columns]
id = "bigint"
amount = "double"
status = "varchar"
"#;

fn shop(dir: &Path) {
    std::fs::create_dir_all(dir.join("transforms/shop")).unwrap();
    std::fs::write(dir.join("phlo.toml"), SOURCES).unwrap();
    for (name, sql) in [
        ("a", "select id, amount from raw.orders"),
        ("b", "select id, amount * 2 as doubled from shop.a"),
        (
            "c",
            "select id, sum(doubled) as total from shop.b group by id",
        ),
        ("d", "select id, status from raw.orders"),
    ] {
        write_model(dir, name, sql);
    }
}

fn write_model(dir: &Path, name: &str, sql: &str) {
    std::fs::write(dir.join(format!("transforms/shop/{name}.sql")), sql).unwrap();
}

#[test]
fn an_edit_recomputes_the_model_and_the_readers_whose_inputs_changed() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    shop(dir);
    let cache = CompileCache::at(dir.join(".phlo/cache/compile"));
    let cold = compile(dir, &cache);
    assert!(!cold.has_errors(), "{:#?}", cold.diagnostics);
    assert_eq!(names(&cold, &cold.cache_stats.typed).len(), 4);
    let warm = compile(dir, &cache);
    assert!(warm.cache_stats.parsed.is_empty() && warm.cache_stats.typed.is_empty());

    // Same output schema: only `a` is parsed and typed again.
    write_model(
        dir,
        "a",
        "select id, amount from raw.orders where amount > 0",
    );
    let edited = compile(dir, &cache);
    assert_eq!(names(&edited, &edited.cache_stats.parsed), ["shop.a"]);
    assert_eq!(names(&edited, &edited.cache_stats.typed), ["shop.a"]);
    assert_eq!(edited.cache_stats.type_hits, 3);
    assert_same(
        "same schema",
        &compile(dir, &CompileCache::disabled()),
        &edited,
    );
    // `a`'s version changed and `b`'s with it (versions chain), from the cache or not.
    assert_ne!(
        cold.models[0].version.as_ref().unwrap().version,
        edited.models[0].version.as_ref().unwrap().version
    );

    // `a` gains a column: `b` reads a changed schema and is typed again; its own schema is
    // unchanged, so `c` is not; `d` reads nothing that changed.
    write_model(dir, "a", "select id, amount, status from raw.orders");
    let widened = compile(dir, &cache);
    assert_eq!(names(&widened, &widened.cache_stats.parsed), ["shop.a"]);
    assert_eq!(
        names(&widened, &widened.cache_stats.typed),
        ["shop.a", "shop.b"]
    );
    assert_same(
        "new column",
        &compile(dir, &CompileCache::disabled()),
        &widened,
    );

    // `a`'s column changes type: `b`'s output type changes too, so `c` is typed again.
    write_model(
        dir,
        "a",
        "select id, cast(amount as bigint) as amount, status from raw.orders",
    );
    let retyped = compile(dir, &cache);
    assert_eq!(
        names(&retyped, &retyped.cache_stats.typed),
        ["shop.a", "shop.b", "shop.c"]
    );
    assert_same(
        "new type",
        &compile(dir, &CompileCache::disabled()),
        &retyped,
    );

    // Back to the first text: everything is in the cache again.
    write_model(dir, "a", "select id, amount from raw.orders");
    let back = compile(dir, &cache);
    assert!(back.cache_stats.parsed.is_empty() && back.cache_stats.typed.is_empty());
    assert_same("reverted", &cold, &back);
}

#[test]
fn a_damaged_cache_is_ignored_and_rewritten() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ws");
    copy_dir(&testdata("lineage"), &dir);
    let cache_dir = dir.join(".phlo/cache/compile");
    let cache = CompileCache::at(&cache_dir);
    let cold = compile(&dir, &cache);
    let models = cold.models.len();
    // One pack per stage: parse and type.
    let packs = files(&cache_dir);
    assert_eq!(packs.len(), 2);
    let originals: Vec<Vec<u8>> = packs.iter().map(|p| std::fs::read(p).unwrap()).collect();
    // Garbage, empty, an older format, the other stage's pack: nothing is read from them.
    // Truncated to a half: the records before the cut are.
    for kind in 0..5 {
        for (n, path) in packs.iter().enumerate() {
            let text = &originals[n];
            let damaged: Vec<u8> = match kind {
                0 => b"\x00\xff not a pack".to_vec(),
                1 => Vec::new(),
                2 => String::from_utf8(text.clone())
                    .unwrap()
                    .replacen("phlo-compile-cache 3", "phlo-compile-cache 2", 1)
                    .into_bytes(),
                3 => originals[1 - n].clone(),
                _ => text[..text.len() / 2].to_vec(),
            };
            std::fs::write(path, damaged).unwrap();
        }
        let damaged = compile(&dir, &cache);
        assert_same(&format!("damaged cache ({kind})"), &cold, &damaged);
        let hits = damaged.cache_stats.parse_hits + damaged.cache_stats.type_hits;
        if kind < 4 {
            assert_eq!(hits, 0, "damage {kind}");
        } else {
            assert!(hits > 0 && hits < 2 * models, "truncated: {hits} hits");
        }
        // Rewritten: the next compile takes everything from the cache.
        let again = compile(&dir, &cache);
        assert!(again.cache_stats.parsed.is_empty() && again.cache_stats.typed.is_empty());
        assert_same("rewritten cache", &cold, &again);
        for path in files(&cache_dir) {
            std::fs::remove_file(path).unwrap();
        }
        for (path, bytes) in packs.iter().zip(&originals) {
            std::fs::write(path, bytes).unwrap();
        }
    }
}

#[test]
fn concurrent_compiles_share_a_cache() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ws");
    std::fs::create_dir_all(&dir).unwrap();
    generate::realistic::generate(&dir, 100).unwrap();
    let cache = CompileCache::at(dir.join(".phlo/cache/compile"));
    let reference = compile(&dir, &CompileCache::disabled());
    let compiles: Vec<Compilation> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..3).map(|_| s.spawn(|| compile(&dir, &cache))).collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for c in &compiles {
        assert_same("concurrent", &reference, c);
    }
    // No temporary file is left, and the cache is complete.
    assert!(files(&dir.join(".phlo/cache/compile"))
        .iter()
        .all(|p| p.extension().is_some_and(|e| e == "pack")));
    let warm = compile(&dir, &cache);
    assert!(warm.cache_stats.parsed.is_empty() && warm.cache_stats.typed.is_empty());
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(files(&path));
        } else {
            out.push(path);
        }
    }
    out.sort();
    out
}
