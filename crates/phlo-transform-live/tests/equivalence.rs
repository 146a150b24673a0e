//! The live workspace's invariant: after any sequence of edits (buffers set and closed, files
//! written and deleted on disk), its snapshot is exactly a cold compile of the same files —
//! diagnostics, types, versions, plan fingerprints and column lineage. Random sequences from
//! fixed seeds, so a failure names its seed and replays.

use phlo_transform_adapter::SchemaRead;
use phlo_transform_compiler::{Compilation, CompileCache};
use phlo_transform_exec::SourceStates;
use phlo_transform_live::{BufferChange, LiveWorkspace};
use phlo_transform_project::Overlay;
use std::path::Path;

/// Sequences run (`PHLO_EQUIVALENCE_SEQUENCES` for a longer soak); each is a fresh workspace
/// and a few edits.
fn sequences() -> u64 {
    std::env::var("PHLO_EQUIVALENCE_SEQUENCES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(500)
}
const STEPS: usize = 4;

const FILES: [&str; 5] = ["a", "b", "c", "d", "e"];

/// Model texts; `{X}` is replaced by a model of the workspace (possibly the model itself: a
/// cycle), so edits add and remove dependencies, unknown columns, missing relations.
const VARIANTS: [&str; 13] = [
    "select id, customer_id, amount from raw.orders",
    "select customer_id, sum(amount) as total from {X} group by customer_id",
    "select c.name, o.customer_id from {X} o join raw.customers c on c.id = o.customer_id",
    "-- customers in one country\nselect id, name from raw.customers where country = 'nl'",
    "select * from {X}",
    "select amount * 2 as doubled, id from {X}",
    "select nope from {X}",
    "select id from shop.missing",
    "select customer_id as id, count(*) as n from {X} group by 1",
    "select id, cast(amount as decimal(10, 2)) / 3 as third from {X}",
    // Keyed: generated tests, and a key the output may lack (the same directives, so an
    // edit between these two compiles incrementally).
    "-- @key id\nselect id, amount from {X}",
    "-- @key id\nselect id, name from raw.customers",
    "-- @key id\n-- @incremental key=id\nselect id, customer_id from {X}",
];

fn text(rng: &mut fastrand::Rng) -> String {
    let variant = VARIANTS[rng.usize(..VARIANTS.len())];
    let x = format!("shop.{}", FILES[rng.usize(..FILES.len())]);
    variant.replace("{X}", &x)
}

fn path(name: &str) -> String {
    format!("transforms/shop/{name}.sql")
}

fn workspace(root: &Path, rng: &mut fastrand::Rng) {
    let write = |rel: &str, body: &str| {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, body).unwrap();
    };
    write(
        "sources/raw/orders.csv",
        "id,customer_id,amount,status\n1,10,12.5,paid\n2,11,7.25,open\n",
    );
    write(
        "sources/raw/customers.csv",
        "id,name,country\n10,Ada,nl\n11,Bo,se\n",
    );
    write(
        "tests/a_has_rows.sql",
        "select 1 as violation from (select count(*) as n from shop.a) t where n = 0",
    );
    for name in &FILES[..4] {
        write(&path(name), &text(rng));
    }
}

/// Everything a compile decides, as text to compare.
fn fingerprint(c: &Compilation) -> String {
    let mut out = String::new();
    for d in c.diagnostics.iter() {
        out.push_str(&format!("{d:?}\n"));
    }
    for m in &c.models {
        out.push_str(&format!(
            "{} {:?} {:?} {:?} {:?} {:?} {:?}\n",
            m.name.as_str(),
            m.schema.as_ref().and_then(|s| s.columns()),
            m.version,
            m.plan_fingerprint,
            m.upstream,
            m.sources,
            m.column_lineage,
        ));
    }
    out.push_str(&serde_json::to_string(&c.lineage().document()).unwrap());
    out
}

fn cold(root: &Path, overlay: &Overlay) -> Compilation {
    let (cache, sources) = (CompileCache::disabled(), SourceStates::default());
    phlo_transform_exec::compile_for_target_with(
        root,
        None,
        SchemaRead::Cached,
        overlay,
        &cache,
        &sources,
    )
    .expect("the workspace compiles")
}

#[test]
fn random_edit_sequences_give_what_a_cold_compile_gives() {
    let mut incremental = 0;
    for seed in 0..sequences() {
        let mut rng = fastrand::Rng::with_seed(seed);
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        workspace(&root, &mut rng);
        let live = LiveWorkspace::open(&root, None).unwrap();
        let mut overlay = Overlay::default();
        let mut steps = Vec::new();
        for _ in 0..STEPS {
            let name = FILES[rng.usize(..FILES.len())];
            let rel = path(name);
            match rng.usize(..11) {
                // An edit in the editor (a new file, too: `e` starts absent).
                0..=5 => {
                    let body = text(&mut rng);
                    steps.push(format!("set {rel}: {body}"));
                    overlay.files.insert(rel.clone(), body.clone());
                    live.apply(vec![BufferChange::Set {
                        path: rel,
                        text: body,
                    }]);
                }
                6 => {
                    steps.push(format!("close {rel}"));
                    overlay.files.remove(&rel);
                    live.apply(vec![BufferChange::Close { path: rel }]);
                }
                7 | 8 => {
                    let body = text(&mut rng);
                    steps.push(format!("write {rel}: {body}"));
                    std::fs::write(root.join(&rel), body).unwrap();
                    live.reload();
                }
                9 => {
                    // A source's data changes shape (its schema read again on reload).
                    let csv = match rng.bool() {
                        true => "id,customer_id,amount,status,discount\n1,10,12.5,paid,0.5\n",
                        false => "id,customer_id,status\n1,10,paid\n",
                    };
                    steps.push(format!("source: {csv}"));
                    std::fs::write(root.join("sources/raw/orders.csv"), csv).unwrap();
                    live.reload();
                }
                _ => {
                    steps.push(format!("delete {rel}"));
                    let _ = std::fs::remove_file(root.join(&rel));
                    live.reload();
                }
            }
            // Every step, since a whole compile (a reload) would hide what an edit got wrong.
            let snapshot = live.snapshot();
            incremental += usize::from(snapshot.incremental);
            let (got, want) = (
                fingerprint(&snapshot.compilation),
                fingerprint(&cold(&root, &overlay)),
            );
            assert!(
                got == want,
                "seed {seed}: the live workspace differs from a cold compile after\n{}\n--- live\n{got}\n--- cold\n{want}",
                steps.join("\n")
            );
            let shown: Vec<_> = snapshot.diagnostics.iter().collect();
            let compiled: Vec<_> = snapshot.compilation.diagnostics.iter().collect();
            assert_eq!(shown, compiled, "seed {seed}: nothing failed to parse");
        }
    }
    // Most edits of an existing model's body compile from the previous compilation; the rest
    // (a new file, a cycle, a closed buffer of a deleted file) compile the whole workspace.
    let steps = sequences() as usize * STEPS;
    eprintln!("{incremental} of {steps} steps compiled incrementally");
    assert!(
        incremental * 10 >= steps,
        "only {incremental} of {steps} steps compiled incrementally"
    );
}

#[test]
fn a_buffer_that_stops_parsing_keeps_its_last_types_downstream() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let write = |rel: &str, body: &str| {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, body).unwrap();
    };
    write("sources/raw/orders.csv", "id,amount\n1,2.5\n");
    write(&path("a"), "select id, amount from raw.orders");
    write(&path("b"), "select id, amount * 2 as doubled from shop.a");
    let live = LiveWorkspace::open(&root, None).unwrap();
    let set = |text: &str| {
        live.apply(vec![BufferChange::Set {
            path: path("a"),
            text: text.into(),
        }])
    };
    set("select id, amount, 1 as one from raw.orders");
    let mid_edit = set("select id, amount, 1 as one from raw.orders where");
    let codes: Vec<(&str, Option<&str>)> = mid_edit
        .diagnostics
        .iter()
        .map(|d| (d.code.0, d.file.as_deref()))
        .collect();
    assert_eq!(codes, vec![("S001", Some("transforms/shop/a.sql"))]);
    let c = &mid_edit.compilation;
    let b = &c.models[c.model_index("shop.b").unwrap()];
    let columns: Vec<&str> = b
        .schema
        .as_ref()
        .unwrap()
        .columns()
        .unwrap()
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(columns, vec!["id", "doubled"]);
    let a = &c.models[c.model_index("shop.a").unwrap()];
    assert_eq!(
        a.schema.as_ref().unwrap().columns().unwrap().len(),
        3,
        "the last text that parsed"
    );
    // A buffer that never parsed has nothing to keep: the compile's own errors show.
    live.apply(vec![BufferChange::Close { path: path("a") }]);
    let fresh = live.apply(vec![BufferChange::Set {
        path: path("c"),
        text: "select id from raw.orders where".into(),
    }]);
    let codes: Vec<&str> = fresh.diagnostics.iter().map(|d| d.code.0).collect();
    assert!(codes.contains(&"S001"), "{codes:?}");
}
