//! Every command's text and JSON output on one fixed workspace (testdata/cli: a CSV source, a
//! view with a warning, a table, an incremental model, data tests), snapshot-tested (issue 12).
//! The same sequence of commands runs twice, in text mode on one copy of the workspace and
//! with `--json` on another; what varies between runs and machines (timestamps, durations,
//! run ids, the temporary directory, hashes over them) is redacted before the comparison.

mod common;

use common::{run, Output};
use serde_json::Value;
use std::path::Path;

/// `(snapshot name, arguments)`, run in this order on each copy. `{run}`, `{plan}` and
/// `{promotion}` are replaced by the copy's first run id, its current plan id and the last
/// promotion into main.
const STEPS: &[(&str, &[&str])] = &[
    ("check", &["check"]),
    ("list", &["list"]),
    (
        "list_selected",
        &["list", "shop.daily+", "--exclude", "shop.orders_log"],
    ),
    ("plan", &["plan"]),
    ("run", &["run", "-j", "1"]),
    ("plan_after_run", &["plan"]),
    ("apply", &["apply", "{plan}"]),
    ("test", &["test"]),
    ("inspect_model", &["inspect", "shop.daily", "--config"]),
    ("inspect_sql", &["inspect", "shop.orders_log", "--sql"]),
    ("inspect_source", &["inspect", "shop.orders"]),
    ("explain", &["explain", "shop.daily"]),
    ("lineage", &["lineage"]),
    ("lineage_model", &["lineage", "shop.daily"]),
    ("lineage_column", &["lineage", "shop.daily.total"]),
    (
        "lineage_graph",
        &["lineage", "shop.daily", "--format", "graph"],
    ),
    ("impact", &["impact", "shop.orders.amount"]),
    ("diff", &["diff", "shop.daily"]),
    ("state_runs", &["state", "runs"]),
    ("state_show", &["state", "show", "{run}"]),
    ("state_model", &["state", "model", "shop.daily"]),
    ("ref_create", &["ref", "create", "dev"]),
    ("ref_list", &["ref", "list"]),
    ("ref_show", &["ref", "show", "dev"]),
    ("promote_check", &["promote", "dev", "--check"]),
    ("run_dev", &["--ref", "dev", "run", "-j", "1"]),
    (
        "branch_diff",
        &["diff", "--from", "main", "--to", "dev", "--full"],
    ),
    ("lineage_ref", &["lineage", "shop.daily", "--ref", "dev"]),
    ("promote", &["promote", "dev"]),
    ("rollback_promotion", &["rollback", "--to", "{promotion}"]),
    ("ref_delete", &["ref", "delete", "dev"]),
    ("rollback_model", &["rollback", "shop.daily", "--to", "0"]),
    ("explain_code", &["explain-code", "C006"]),
    ("unknown_model", &["inspect", "shop.dialy"]),
    // The error that stopped it first, then the warnings met before it.
    ("lineage_unknown", &["lineage", "shop.dialy"]),
    ("fmt_check", &["fmt", "--check"]),
    ("fmt", &["fmt"]),
    ("init_refused", &["init"]),
];

/// Then with a model that does not compile (it reads a column that does not exist).
const BROKEN_STEPS: &[(&str, &[&str])] = &[
    ("broken_check", &["check"]),
    ("broken_plan", &["plan"]),
    ("broken_run", &["run", "-j", "1"]),
    ("clean", &["clean"]),
];

/// Outputs whose shape is fixed elsewhere: printed without the envelope.
const DOCUMENTS: &[&str] = &["lineage_graph"];

const BROKEN_MODEL: (&str, &str) = (
    "transforms/shop/broken.sql",
    "-- @table\nselect id, missing_column from shop.orders_clean\n",
);

#[test]
fn every_command_text_and_json() {
    let text_ws = common::workspace("cli");
    let json_ws = common::workspace("cli");
    for (name, args) in STEPS {
        step(name, args, text_ws.path(), json_ws.path());
    }
    for ws in [text_ws.path(), json_ws.path()] {
        common::write_file(ws, BROKEN_MODEL.0, BROKEN_MODEL.1);
    }
    for (name, args) in BROKEN_STEPS {
        step(name, args, text_ws.path(), json_ws.path());
    }
}

/// Runs `args` in text mode on `text_ws` and with `--json` on `json_ws`; snapshots both.
fn step(name: &str, args: &[&str], text_ws: &Path, json_ws: &Path) {
    let out = run_filled(text_ws, &[], args);
    insta::assert_snapshot!(format!("{name}_text"), text(&out, text_ws));
    // JSON mode: one document on stdout, nothing on stderr.
    let out = run_filled(json_ws, &["--json"], args);
    let doc = out.json();
    if !DOCUMENTS.contains(&name) {
        assert!(
            doc.get("diagnostics").is_some_and(Value::is_array),
            "{name}: no diagnostics array in the envelope: {doc}"
        );
    }
    insta::assert_json_snapshot!(
        format!("{name}_json"),
        serde_json::json!({
            "exit": out.code,
            "stderr": redact(&out.stderr, json_ws),
            "stdout": redact_json(doc, json_ws),
        })
    );
}

/// Runs `flags` + `args` in `ws`, placeholders filled from the workspace's state.
fn run_filled(ws: &Path, flags: &[&str], args: &[&str]) -> Output {
    let mut filled: Vec<String> = flags.iter().map(|f| f.to_string()).collect();
    for a in args {
        filled.push(match *a {
            "{run}" => first_run(ws),
            "{plan}" => query(ws, &["plan"])["plan_id"].as_str().unwrap().into(),
            "{promotion}" => query(ws, &["ref", "show", "main"])["events"][0]["event_id"]
                .as_str()
                .unwrap()
                .into(),
            a => a.to_string(),
        });
    }
    run(ws, &filled.iter().map(String::as_str).collect::<Vec<_>>())
}

fn query(ws: &Path, args: &[&str]) -> Value {
    let mut all = vec!["--json"];
    all.extend(args);
    run(ws, &all).json()
}

/// The oldest run's id.
fn first_run(ws: &Path) -> String {
    let runs = query(ws, &["state", "runs"]);
    let runs = runs["runs"].as_array().unwrap();
    runs.last().unwrap()["run_id"].as_str().unwrap().to_string()
}

/// `plan --json` and `run --json` carry the compile warnings (issue 12: they dropped them).
#[test]
fn plan_and_run_json_carry_the_compile_warnings() {
    let ws = common::workspace("cli");
    for args in [&["--json", "plan"][..], &["--json", "run"]] {
        let out = run(ws.path(), args);
        assert_eq!(out.code, 0, "{args:?}: {}", out.stderr);
        let doc = out.json();
        let codes: Vec<&str> = doc["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["code"].as_str().unwrap())
            .collect();
        assert_eq!(codes, ["C006"], "{args:?}: {doc}");
        assert_eq!(doc["diagnostics"][0]["severity"], "warning");
        // The report's own keys stay where they were.
        assert!(
            doc["models"].is_array() && doc["plan_id"].is_string(),
            "{doc}"
        );
    }
}

/// Exit code, stdout and stderr of a text-mode command, redacted.
fn text(out: &Output, ws: &Path) -> String {
    format!(
        "exit: {}\n--- stdout\n{}--- stderr\n{}",
        out.code,
        redact(&out.stdout, ws),
        redact(&out.stderr, ws)
    )
}

/// Keys whose values vary from run to run.
const VARYING: &[&str] = &[
    "duration_ms",
    "started_at",
    "finished_at",
    "created_at",
    "materialized_at",
    "updated_at",
    "run_started_at",
    "at",
    "elapsed_ms",
    "generation",
];

fn redact_json(v: Value, ws: &Path) -> Value {
    match v {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| {
                    let v = if VARYING.contains(&k.as_str()) && !v.is_null() {
                        Value::String(format!("[{k}]"))
                    } else {
                        redact_json(v, ws)
                    };
                    (k, v)
                })
                .collect(),
        ),
        Value::Array(items) => {
            Value::Array(items.into_iter().map(|v| redact_json(v, ws)).collect())
        }
        Value::String(s) => Value::String(redact(&s, ws)),
        other => other,
    }
}

/// The workspace path, timestamps, durations, run ids and short hashes replaced by
/// placeholders.
fn redact(text: &str, ws: &Path) -> String {
    let text = text.replace(&ws.display().to_string(), "[WS]");
    let text = timestamps(&text);
    let text = hex_tokens(&text, 32, "[RUN_ID]");
    // Reference hashes cover the tables' run ids; plan ids are 16 digits too.
    let text = hex_tokens(&text, 16, "[HASH]");
    let text = short_run_ids(&text);
    durations(&text)
}

/// `2026-12-01T06:35:47.645Z` (any fraction, `Z` or `+00:00`) → `[TIME]`.
fn timestamps(text: &str) -> String {
    let b = text.as_bytes();
    let shape = b"dddd-dd-ddTdd:dd:dd";
    let mut out = String::new();
    let mut i = 0;
    while i < b.len() {
        let matches = b.len() - i >= shape.len()
            && shape.iter().zip(&b[i..]).all(|(s, c)| match s {
                b'd' => c.is_ascii_digit(),
                b'T' => *c == b'T' || *c == b' ',
                s => s == c,
            });
        if !matches {
            let ch = text[i..].chars().next().unwrap();
            out.push(ch);
            i += ch.len_utf8();
            continue;
        }
        i += shape.len();
        if b.get(i) == Some(&b'.') {
            i += 1;
            while b.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
        }
        if b.get(i) == Some(&b'Z') {
            i += 1;
        } else if matches!(b.get(i), Some(b'+') | Some(b'-'))
            && b.len() - i >= 6
            && b[i + 3] == b':'
        {
            i += 6;
        }
        out.push_str("[TIME]");
    }
    out
}

/// Lowercase hex tokens of exactly `len` digits → `tag`.
fn hex_tokens(text: &str, len: usize, tag: &str) -> String {
    let mut out = String::new();
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        let hex = word.len() == len
            && word
                .bytes()
                .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c));
        out.push_str(if hex { tag } else { word });
        word.clear();
    };
    for ch in text.chars() {
        if ch.is_ascii_alphanumeric() {
            word.push(ch);
        } else {
            flush(&mut word, &mut out);
            out.push(ch);
        }
    }
    flush(&mut word, &mut out);
    out
}

/// `run 01a2306d70c2` (a run id's 12-digit prefix) → `run [RUN_ID]`.
fn short_run_ids(text: &str) -> String {
    let mut pieces = text.split("run ");
    let mut out = pieces.next().unwrap_or_default().to_string();
    for piece in pieces {
        out.push_str("run ");
        let prefix: String = piece.chars().take(12).collect();
        let hex = prefix.len() == 12 && prefix.bytes().all(|c| c.is_ascii_hexdigit());
        let ends = piece[prefix.len()..]
            .chars()
            .next()
            .is_none_or(|c| !c.is_ascii_alphanumeric());
        if hex && ends {
            out.push_str("[RUN_ID]");
            out.push_str(&piece[12..]);
        } else {
            out.push_str(piece);
        }
    }
    out
}

/// `12 ms`, `12ms`, `1.5s` → `[ms]`: wall time.
fn durations(text: &str) -> String {
    let mut out = String::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let starts = chars[i].is_ascii_digit() && (i == 0 || !chars[i - 1].is_alphanumeric());
        if starts {
            let mut j = i;
            while j < chars.len() && (chars[j].is_ascii_digit() || chars[j] == '.') {
                j += 1;
            }
            let rest: String = chars[j..chars.len().min(j + 3)].iter().collect();
            let unit = if rest.starts_with(" ms") {
                3
            } else if rest.starts_with("ms") {
                2
            } else if rest.starts_with('s') && chars[i..j].contains(&'.') {
                1
            } else {
                0
            };
            let ends = chars.get(j + unit).is_none_or(|c| !c.is_alphanumeric());
            if unit > 0 && ends {
                // Padding after it follows the duration's width: one space instead.
                out.push_str("[ms]");
                i = j + unit;
                if chars.get(i) == Some(&' ') {
                    out.push(' ');
                    while chars.get(i) == Some(&' ') {
                        i += 1;
                    }
                }
                continue;
            }
            out.extend(&chars[i..j]);
            i = j;
            continue;
        }
        out.push(chars[i]);
        i += 1;
    }
    out
}
