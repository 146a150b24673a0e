//! `fmt` (issue 43, item 4): idempotent on every model and test of the repository's
//! workspaces, never a different model version, `--check` writes nothing and fails CI.

mod common;

use common::{run, workspace};
use phlo_transform_format::{format_text, Outcome, Refusal};
use phlo_transform_project::Workspace;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Every workspace of testdata/ (a folder with `transforms/` or `workflows/`), the example
/// and the `init` templates.
fn corpora() -> Vec<PathBuf> {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = vec![
        repo.join("examples/lab"),
        repo.join("crates/phlo-transform-project/templates/init"),
    ];
    let mut stack = vec![repo.join("testdata")];
    while let Some(dir) = stack.pop() {
        if dir.join("transforms").is_dir() || dir.join("workflows").is_dir() {
            found.push(dir);
            continue;
        }
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            if entry.file_type().unwrap().is_dir() {
                stack.push(entry.path());
            }
        }
    }
    found.sort();
    found
}

#[test]
fn fmt_is_idempotent_on_every_model_and_test_of_the_repository() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (mut files, mut formatted) = (0, 0);
    let mut left_alone = BTreeMap::new();
    let mut unparsed = Vec::new();
    for corpus in corpora() {
        let ws = Workspace::load(&corpus).unwrap();
        let texts = ws
            .models
            .iter()
            .map(|m| (&m.path, &m.text))
            .chain(ws.tests.iter().map(|t| (&t.path, &t.text)));
        for (path, text) in texts {
            files += 1;
            let shown = corpus.join(path);
            let shown = shown.strip_prefix(repo).unwrap().display().to_string();
            match format_text(text, path) {
                Ok(Outcome::Formatted(once)) => {
                    formatted += 1;
                    assert_eq!(
                        format_text(&once, path).unwrap(),
                        Outcome::Unchanged,
                        "{shown}: formatting the formatted text changed it:\n{once}"
                    );
                }
                Ok(Outcome::Unchanged) => {}
                Ok(Outcome::Refused(why)) => {
                    left_alone.insert(shown, why);
                }
                Err(d) => unparsed.push((shown, d.code.0)),
            }
        }
    }
    assert!(files > 100, "only {files} files found");
    assert!(formatted > files / 2, "{formatted} of {files} formatted");
    // Exactly these are left alone, each for a reason it names; anything new is a formatter
    // bug to fix, never accepted in silence.
    let expected: BTreeMap<String, Refusal> = BTreeMap::new();
    assert_eq!(left_alone, expected);
    // The workspaces of testdata/errors whose SQL is broken on purpose.
    unparsed.sort();
    assert_eq!(
        unparsed,
        [(
            "testdata/errors/syntax_error/workflows/lab/transforms/broken.sql".to_string(),
            "S001"
        ),]
    );
}

/// `check --json`'s version of every model.
fn versions(dir: &Path) -> BTreeMap<String, String> {
    let out = run(dir, &["check", "--json"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    out.json()["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["name"].as_str().unwrap().to_string(),
                m["version"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Every `.sql` file under `dir` and its text.
fn sql_files(dir: &Path) -> BTreeMap<PathBuf, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let p = entry.path();
            if p.is_dir() {
                if !p.ends_with(".phlo") {
                    stack.push(p);
                }
            } else if p.extension().is_some_and(|e| e == "sql") {
                out.insert(p.clone(), std::fs::read_to_string(&p).unwrap());
            }
        }
    }
    out
}

#[test]
fn fmt_changes_no_model_version_and_check_writes_nothing() {
    for name in ["tpch", "lineage", "mvp", "cli", "examples/lab"] {
        let ws = match name.strip_prefix("examples/") {
            Some(example) => {
                let ws = tempfile::tempdir().unwrap();
                let from = Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("examples")
                    .join(example);
                common::copy_dir(&from, ws.path());
                ws
            }
            None => workspace(name),
        };
        let dir = ws.path();
        let before = versions(dir);
        let texts = sql_files(dir);

        let check = run(dir, &["fmt", "--check", "--json"]);
        assert_eq!(check.code, 1, "{name}: {}\n{}", check.stdout, check.stderr);
        let report = check.json();
        let would: Vec<&str> = report["files"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["status"] == "would_format")
            .map(|f| f["path"].as_str().unwrap())
            .collect();
        assert!(!would.is_empty(), "{name}: {report}");
        assert_eq!(report["counts"]["would_format"], would.len());
        assert_eq!(sql_files(dir), texts, "{name}: --check wrote a file");

        let out = run(dir, &["fmt", "--json"]);
        assert_eq!(out.code, 0, "{name}: {}\n{}", out.stdout, out.stderr);
        let formatted: Vec<String> = out.json()["files"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["status"] == "formatted")
            .map(|f| f["path"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(
            formatted, would,
            "{name}: --check listed what fmt then changed"
        );
        let after_texts = sql_files(dir);
        let changed = texts.iter().filter(|(p, t)| after_texts[*p] != **t).count();
        assert_eq!(changed, formatted.len(), "{name}");

        // The header (directives, leading comments) of every file is kept line for line.
        for (path, text) in &texts {
            let header: Vec<&str> = text
                .lines()
                .take_while(|l| l.trim().is_empty() || l.trim().starts_with("--"))
                .filter(|l| !l.trim().is_empty())
                .map(str::trim_end)
                .collect();
            let kept: Vec<&str> = after_texts[path].lines().take(header.len()).collect();
            assert_eq!(kept, header, "{}", path.display());
        }

        assert_eq!(
            versions(dir),
            before,
            "{name}: fmt changed a model's version"
        );
        let again = run(dir, &["fmt", "--check"]);
        assert_eq!(again.code, 0, "{name}: {}\n{}", again.stdout, again.stderr);
        assert!(
            again.stdout.contains("0 would be reformatted"),
            "{}",
            again.stdout
        );
    }
}

#[test]
fn fmt_check_lists_the_files_in_text_and_targets_narrow_it() {
    let ws = workspace("cli");
    let dir = ws.path();
    let out = run(dir, &["fmt", "--check"]);
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains("would reformat transforms/shop/"),
        "{}",
        out.stdout
    );

    // A model name formats that model's file only.
    let first = run(dir, &["fmt", "--check", "--json"]).json();
    let target = first["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["status"] == "would_format" && f["kind"] == "model")
        .expect("a model to format")
        .clone();
    let name = target["name"].as_str().unwrap();
    let one = run(dir, &["fmt", "--json", name]);
    assert_eq!(one.code, 0, "{}\n{}", one.stdout, one.stderr);
    let files = one.json()["files"].as_array().unwrap().clone();
    assert_eq!(files.len(), 1, "{files:?}");
    assert_eq!(files[0]["path"], target["path"]);
    assert_eq!(files[0]["status"], "formatted");

    // A name nothing has is P008, with the close names suggested, and nothing is written.
    let texts = sql_files(dir);
    let unknown = run(dir, &["fmt", "--json", "shop.ordrs"]);
    common::assert_refused(&unknown, "P008", "glob");
    assert_eq!(sql_files(dir), texts);
}

#[test]
fn a_file_the_formatter_cannot_keep_is_left_alone_with_a_warning() {
    let ws = workspace("cli");
    let dir = ws.path();
    let path = "transforms/shop/templated.sql";
    let text = "select  o.id   from {{ ref('shop.orders') }} as o\n";
    common::write_file(dir, path, text);
    let out = run(dir, &["fmt", "--json", "transforms/shop/templated.sql"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let json = out.json();
    assert_eq!(json["files"][0]["status"], "left_alone", "{json}");
    assert_eq!(json["files"][0]["reason"], "templated", "{json}");
    let d = &json["diagnostics"][0];
    assert_eq!(d["code"], "P014", "{json}");
    assert_eq!(d["severity"], "warning");
    assert_eq!(d["file"], path);
    assert!(d["help"].as_str().is_some());
    assert_eq!(std::fs::read_to_string(dir.join(path)).unwrap(), text);
}
