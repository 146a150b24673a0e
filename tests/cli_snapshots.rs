//! Every command's text and JSON output on one fixed workspace (testdata/cli: a CSV source, a
//! view with a warning, a table, an incremental model, data tests), snapshot-tested (issue 12).
//! The same sequence of commands runs twice, in text mode on one copy of the workspace and
//! with `--json` on another; what varies between runs and machines (timestamps, durations,
//! run ids, the temporary directory, hashes over them) is redacted before the comparison.

mod common;

use common::{run, Output};
use serde_json::Value;
use std::path::Path;

/// `(snapshot name, arguments)`, run in this order on each copy. `{run}` is replaced by the
/// copy's first run id.
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
    ("test", &["test"]),
    ("inspect_model", &["inspect", "shop.daily", "--config"]),
    ("inspect_sql", &["inspect", "shop.orders_log", "--sql"]),
    ("inspect_source", &["inspect", "shop.orders"]),
    ("explain", &["explain", "shop.daily"]),
    ("lineage", &["lineage", "shop.daily"]),
    ("lineage_column", &["lineage", "shop.daily.total"]),
    ("impact", &["impact", "shop.orders.amount"]),
    ("diff", &["diff", "shop.daily"]),
    ("state_runs", &["state", "runs"]),
    ("state_show", &["state", "show", "{run}"]),
    ("state_model", &["state", "model", "shop.daily"]),
    ("ref_create", &["ref", "create", "dev"]),
    ("ref_list", &["ref", "list"]),
    ("ref_show", &["ref", "show", "dev"]),
    ("promote_check", &["promote", "dev", "--check"]),
    ("ref_delete", &["ref", "delete", "dev"]),
    ("rollback_model", &["rollback", "shop.daily", "--to", "0"]),
    ("explain_code", &["explain-code", "C006"]),
    ("unknown_model", &["inspect", "shop.dialy"]),
    ("clean", &["clean"]),
];

#[test]
fn every_command_text_and_json() {
    let text_ws = common::workspace("cli");
    let json_ws = common::workspace("cli");
    let mut text_run = String::new();
    let mut json_run = String::new();
    for (name, args) in STEPS {
        // Text mode.
        let text_args = with_run(args, &text_run);
        let out = run(
            text_ws.path(),
            &text_args.iter().map(String::as_str).collect::<Vec<_>>(),
        );
        insta::assert_snapshot!(format!("{name}_text"), text(&out, text_ws.path()));
        // JSON mode: one document on stdout, nothing on stderr.
        let mut json_args = vec!["--json".to_string()];
        json_args.extend(with_run(args, &json_run));
        let out = run(
            json_ws.path(),
            &json_args.iter().map(String::as_str).collect::<Vec<_>>(),
        );
        let doc = out.json();
        assert!(
            doc.get("diagnostics").is_some_and(Value::is_array),
            "{name}: no diagnostics array in the envelope: {doc}"
        );
        if *name == "run" {
            text_run = first_run(text_ws.path());
            json_run = doc["run_id"].as_str().unwrap().to_string();
        }
        let redacted = redact_json(doc, json_ws.path());
        insta::assert_json_snapshot!(
            format!("{name}_json"),
            serde_json::json!({ "exit": out.code, "stderr": redact(&out.stderr, json_ws.path()), "stdout": redacted })
        );
    }
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

fn with_run(args: &[&str], run_id: &str) -> Vec<String> {
    args.iter().map(|a| a.replace("{run}", run_id)).collect()
}

fn first_run(ws: &Path) -> String {
    let runs = run(ws, &["--json", "state", "runs"]).json();
    runs["runs"][0]["run_id"].as_str().unwrap().to_string()
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
