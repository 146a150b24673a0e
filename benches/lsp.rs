//! The language server on a generated workspace, through the real binary over JSON-RPC:
//! start to the first answer (the workspace compiled), one model's body edited until its
//! diagnostics arrive, a column removed that many models read until every affected file's
//! diagnostics arrive, hover latency, resident memory. Compared with a cold `check`.
//!
//! ```text
//! cargo build --release && cargo bench --bench lsp            # realistic shape, N = 1,000 and 10,000
//! PHLO_BENCH_SIZES=10000 cargo bench --bench lsp
//! ```
//!
//! Under `cargo test --benches` it runs a quick smoke test on 200 models.
//! See docs/performance.md for the figures.

#[path = "support/generate.rs"]
#[allow(dead_code)]
mod generate;
#[path = "../tests/support/lsp_client.rs"]
#[allow(dead_code)]
mod lsp_client;

use lsp_client::Client;
use phlo_transform_adapter::SchemaRead;
use phlo_transform_compiler::Compilation;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_phlo-transform");

fn main() {
    if std::env::var_os("PHLO_BENCH_SHAPE").is_none() {
        std::env::set_var("PHLO_BENCH_SHAPE", "realistic");
    }
    let (bench, sizes) = generate::bench_sizes();
    for n in sizes {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        generate::generate(&root, n).unwrap();
        let figures = measure(&root);
        if bench {
            println!("lsp bench, {n} models:");
            for (name, value) in &figures {
                println!("  {name:<44} {value}");
            }
        } else {
            println!(
                "lsp bench smoke test: {n} models, {} figures",
                figures.len()
            );
        }
    }
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

fn uri(root: &Path, rel: &str) -> String {
    format!("file://{}/{rel}", root.display())
}

/// The model with the most readers of its column `amount`, and those readers' count.
fn most_read(c: &Compilation) -> (usize, usize) {
    let mut readers: BTreeMap<String, usize> = BTreeMap::new();
    for m in &c.models {
        let mut read = std::collections::BTreeSet::new();
        for cd in m.column_lineage.iter().flatten() {
            for d in &cd.derivations {
                if &*d.input.column == "amount" {
                    read.insert(d.input.dataset.to_string());
                }
            }
        }
        for dataset in read {
            *readers.entry(dataset).or_default() += 1;
        }
    }
    let (name, count) = readers
        .into_iter()
        .filter(|(name, _)| c.model_index(name).is_some())
        .max_by_key(|(_, n)| *n)
        .expect("a model whose amount is read");
    (c.model_index(&name).unwrap(), count)
}

/// `text` with its body wrapped so that its output loses column `amount` (or, with `None`,
/// gains an unknown column reference): an edit whose errors land downstream (or on it).
fn wrapped(text: &str, drop_amount: bool) -> String {
    match drop_amount {
        true => format!("select * exclude (amount) from (\n{text}\n) as t\n"),
        false => format!("select * from (\n{text}\n) as t where nope = 1\n"),
    }
}

fn measure(root: &Path) -> Vec<(&'static str, String)> {
    let mut figures = Vec::new();
    let started = Instant::now();
    let check = std::process::Command::new(BIN)
        .arg("-C")
        .arg(root)
        .arg("check")
        .env("PHLO_COMPILE_CACHE", "off")
        .env_remove("PHLO_STATE_URL")
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stdout)
    );
    figures.push(("cold `check` (no compile cache)", ms(started.elapsed())));

    let c = phlo_transform_exec::compile_for_target(root, None, SchemaRead::Cached, None).unwrap();
    let (hub, readers) = most_read(&c);
    let leaf = (0..c.models.len())
        .rev()
        .find(|&i| c.graph.downstream(i).is_empty())
        .unwrap();
    let (hub_path, leaf_path) = (c.models[hub].path.clone(), c.models[leaf].path.clone());
    let hub_text = c.workspace.models[hub].text.clone();
    let leaf_text = c.workspace.models[leaf].text.clone();
    let (hub_uri, leaf_uri) = (uri(root, &hub_path), uri(root, &leaf_path));
    // A relation the leaf reads, to hover on.
    let span = c.models[leaf]
        .relations
        .iter()
        .find_map(|r| r.relation.span)
        .unwrap();
    let hover_at = json!({"textDocument": {"uri": leaf_uri},
        "position": {"line": span.start.line - 1, "character": span.start.column}});
    drop(c);

    let started = Instant::now();
    let mut client = Client::start(Path::new(BIN), root);
    let pid = client.child.id();
    client.request(
        "initialize",
        json!({"processId": null, "rootUri": format!("file://{}", root.display()), "capabilities": {}}),
    );
    client.notify("initialized", json!({}));
    let first = client.request("textDocument/hover", hover_at.clone());
    assert!(first["result"].is_object(), "{first}");
    figures.push(("server start to the first answer", ms(started.elapsed())));

    let open = |client: &mut Client, uri: &str, text: &str| {
        client.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri, "languageId": "sql", "version": 1, "text": text}}),
        );
        client.request("textDocument/hover", hover_at.clone());
    };
    let change = |client: &mut Client, uri: &str, version: i64, text: &str| {
        client.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": text}]}),
        );
    };

    open(&mut client, &leaf_uri, &leaf_text);
    client.notifications.clear();
    let started = Instant::now();
    change(&mut client, &leaf_uri, 2, &wrapped(&leaf_text, false));
    let errors = client.diagnostics_for(&leaf_uri);
    assert!(!errors.as_array().unwrap().is_empty());
    figures.push((
        "one model's body edited → its diagnostics",
        ms(started.elapsed()),
    ));
    let started = Instant::now();
    change(&mut client, &leaf_uri, 3, &leaf_text);
    assert_eq!(client.diagnostics_for(&leaf_uri), json!([]));
    figures.push((
        "…and fixed → its diagnostics cleared",
        ms(started.elapsed()),
    ));

    open(&mut client, &hub_uri, &hub_text);
    client.notifications.clear();
    let started = Instant::now();
    change(&mut client, &hub_uri, 2, &wrapped(&hub_text, true));
    // Answered after the compile and its publications.
    client.request("textDocument/hover", hover_at.clone());
    let elapsed = started.elapsed();
    let files = client
        .notifications
        .iter()
        .filter(|m| m["method"] == "textDocument/publishDiagnostics")
        .count();
    figures.push(("column removed → every affected file", ms(elapsed)));
    figures.push((
        "  models reading the column / files published",
        format!("{readers} / {files}"),
    ));
    change(&mut client, &hub_uri, 3, &hub_text);

    let mut hovers: Vec<Duration> = (0..200)
        .map(|_| {
            let started = Instant::now();
            let answer = client.request("textDocument/hover", hover_at.clone());
            assert!(answer["result"].is_object());
            started.elapsed()
        })
        .collect();
    hovers.sort();
    figures.push(("hover p50", ms(hovers[hovers.len() / 2])));
    figures.push(("hover p99", ms(hovers[hovers.len() * 99 / 100])));
    figures.push(("resident memory (peak)", peak_rss(pid)));

    client.request("shutdown", Value::Null);
    client.notify("exit", Value::Null);
    assert!(client.child.wait().unwrap().success());
    figures
}

/// The process's peak resident set (`VmHWM`).
fn peak_rss(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .map(|l| l["VmHWM:".len()..].trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into())
}
