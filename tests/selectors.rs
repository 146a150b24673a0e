//! The selector language (SPEC §43, §82) end to end, with the real binary on a copy of
//! examples/lab: every grammar element, the errors, exclusion, --force, and `--since`.

mod common;

use common::{git, run, write_file};
use serde_json::Value;
use std::path::Path;

fn lab() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    common::copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/lab"),
        dir.path(),
    );
    dir
}

fn names(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap().to_string())
        .collect()
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

fn strings(v: &[&str]) -> Vec<String> {
    sorted(v.iter().map(|s| s.to_string()).collect())
}

/// `plan --json` with `args`: (selected, expanded, required) names, sorted.
fn selection(dir: &Path, args: &[&str]) -> (Vec<String>, Vec<String>, Vec<String>) {
    let mut all = vec!["plan", "--json"];
    all.extend(args);
    let out = run(dir, &all);
    assert_eq!(out.code, 0, "{args:?}\n{}\n{}", out.stdout, out.stderr);
    let s = &out.json()["selection"];
    (
        sorted(names(&s["matched"])),
        sorted(names(&s["expanded"])),
        sorted(names(&s["required"])),
    )
}

/// The code and suggestions of every diagnostic a failing `plan --json` reports.
fn errors(dir: &Path, args: &[&str]) -> Vec<(String, Vec<String>)> {
    let mut all = vec!["plan", "--json"];
    all.extend(args);
    let out = run(dir, &all);
    assert_eq!(out.code, 2, "{args:?}\n{}\n{}", out.stdout, out.stderr);
    out.json()["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["code"].as_str().unwrap().to_string(),
                names(&d["suggestions"]),
            )
        })
        .collect()
}

/// Selector arguments, then the selected, expanded and required models.
type Row = (Vec<&'static str>, Vec<String>, Vec<String>, Vec<String>);

const STAGING: [&str; 3] = [
    "assay.staging.raw_results",
    "assay.staging.samples",
    "assay.staging.valid_results",
];

#[test]
fn every_grammar_element_selects_what_it_says() {
    let ws = lab();
    let dir = ws.path();
    let none: Vec<String> = Vec::new();
    let mfg = [
        "manufacturing.batch_release",
        "manufacturing.batches",
        "manufacturing.completed_batches",
        "manufacturing.release_backlog",
        "manufacturing.site_monthly_yield",
    ];
    let table: Vec<Row> = vec![
        (
            vec!["namespace:manufacturing"],
            strings(&mfg),
            none.clone(),
            strings(&[
                "shared.calendar",
                "shared.sites",
                "assay.marts.batch_quality",
                "assay.marts.result_facts",
                "assay.staging.raw_results",
                "assay.staging.samples",
                "assay.staging.valid_results",
                "shared.instruments",
                "shared.product_specs",
            ]),
        ),
        (
            vec!["tag:kpi"],
            strings(&["manufacturing.site_monthly_yield"]),
            none.clone(),
            strings(&[
                "manufacturing.batches",
                "manufacturing.completed_batches",
                "shared.calendar",
                "shared.sites",
            ]),
        ),
        (
            vec!["source:lims"],
            strings(&["assay.staging.raw_results", "assay.staging.samples"]),
            none.clone(),
            none.clone(),
        ),
        (
            vec!["source:ref.sites"],
            strings(&["shared.sites"]),
            none.clone(),
            none.clone(),
        ),
        (
            vec!["assay.staging.*"],
            strings(&STAGING),
            none.clone(),
            none.clone(),
        ),
        (
            vec!["model://shared/sites"],
            strings(&["shared.sites"]),
            none.clone(),
            none.clone(),
        ),
        (
            vec!["shared.sites"],
            strings(&["shared.sites"]),
            none.clone(),
            none.clone(),
        ),
        (
            vec!["release_backlog"],
            strings(&["manufacturing.release_backlog"]),
            none.clone(),
            strings(&[
                "manufacturing.batch_release",
                "manufacturing.batches",
                "shared.sites",
                "assay.marts.batch_quality",
                "assay.marts.result_facts",
                "assay.staging.raw_results",
                "assay.staging.samples",
                "assay.staging.valid_results",
                "shared.instruments",
                "shared.product_specs",
            ]),
        ),
        (
            vec!["+staging.valid_results"],
            strings(&["assay.staging.valid_results"]),
            strings(&["assay.staging.raw_results"]),
            none.clone(),
        ),
        (
            vec!["marts.batch_quality+"],
            strings(&["assay.marts.batch_quality"]),
            strings(&[
                "manufacturing.batch_release",
                "manufacturing.release_backlog",
            ]),
            strings(&[
                "assay.marts.result_facts",
                "assay.staging.raw_results",
                "assay.staging.samples",
                "assay.staging.valid_results",
                "manufacturing.batches",
                "shared.instruments",
                "shared.product_specs",
                "shared.sites",
            ]),
        ),
        (
            vec!["-s", "shared.calendar", "--select", "shared.sites"],
            strings(&["shared.calendar", "shared.sites"]),
            none.clone(),
            none.clone(),
        ),
        (
            vec!["shared.sites", "--downstream", "--tag", "reference"],
            strings(&["shared.sites"]),
            strings(&[
                "assay.marts.lab_turnaround",
                "manufacturing.batch_release",
                "manufacturing.release_backlog",
                "manufacturing.site_monthly_yield",
                "shared.instruments",
                "assay.marts.instrument_monthly",
                "assay.marts.result_facts",
                "assay.marts.batch_quality",
            ]),
            strings(&[
                "assay.staging.raw_results",
                "assay.staging.samples",
                "assay.staging.valid_results",
                "manufacturing.batches",
                "manufacturing.completed_batches",
                "shared.calendar",
                "shared.product_specs",
            ]),
        ),
        (
            vec![
                "--tag",
                "mart",
                "--workflow",
                "assay",
                "--exclude",
                "assay.marts.instrument_monthly",
                "--exclude",
                "lab_turnaround",
            ],
            strings(&["assay.marts.batch_quality", "assay.marts.result_facts"]),
            none.clone(),
            strings(&[
                "assay.staging.raw_results",
                "assay.staging.samples",
                "assay.staging.valid_results",
                "shared.instruments",
                "shared.product_specs",
                "shared.sites",
            ]),
        ),
        (
            vec![
                "shared.calendar+",
                "--exclude",
                "manufacturing.site_monthly_yield",
            ],
            strings(&["shared.calendar"]),
            strings(&["assay.marts.instrument_monthly"]),
            strings(&[
                "assay.marts.result_facts",
                "assay.staging.raw_results",
                "assay.staging.samples",
                "assay.staging.valid_results",
                "shared.instruments",
                "shared.product_specs",
                "shared.sites",
            ]),
        ),
    ];
    for (args, selected, expanded, required) in table {
        assert_eq!(
            selection(dir, &args),
            (selected, expanded, required),
            "{args:?}"
        );
    }
    for all in [&["all"][..], &["*"], &[]] {
        let (selected, _, _) = selection(dir, all);
        assert_eq!(selected.len(), 16, "{all:?}");
    }
    let human = run(dir, &["plan", "tag:kpi"]);
    assert!(
        human
            .stdout
            .contains("Selection:   tag:kpi — 1 selected, 4 dependencies"),
        "{}",
        human.stdout
    );
}

#[test]
fn bad_selectors_fail_with_codes_and_suggestions() {
    let ws = lab();
    let dir = ws.path();
    // A second `samples` model makes the suffix ambiguous.
    write_file(dir, "transforms/shared/samples.sql", "select 1 as one\n");
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    assert_eq!(
        errors(dir, &["assay.staging.sampels"]),
        [(
            "L005".to_string(),
            s(&[
                "assay.staging.samples",
                "shared.samples",
                "assay.staging.raw_results"
            ])
        )]
    );
    assert_eq!(
        errors(dir, &["samples"]),
        [(
            "L006".to_string(),
            s(&["assay.staging.samples", "shared.samples"])
        )]
    );
    assert_eq!(
        errors(dir, &["tag:kpii", "namespace:shard", "source:lim"]),
        [
            ("L005".to_string(), s(&["kpi"])),
            ("L005".to_string(), s(&["shared"])),
            (
                "L005".to_string(),
                s(&["lims", "lims.results", "lims.samples"])
            ),
        ]
    );
    assert_eq!(errors(dir, &["++x"]), [("L007".to_string(), s(&[]))]);
    assert_eq!(
        errors(dir, &["--since", "main", "shared.sites"]),
        [("L007".to_string(), s(&[]))]
    );
    assert_eq!(
        errors(dir, &["--workflow", "manufacturing", "--tag", "qc"]),
        [("L004".to_string(), s(&[]))]
    );
    let human = run(dir, &["plan", "samples"]);
    assert!(
        human.stderr.contains("error[L006]")
            && human
                .stderr
                .contains("did you mean: assay.staging.samples, shared.samples"),
        "{}",
        human.stderr
    );
    assert_eq!(run(dir, &["run", "nope.nothing"]).code, 2);
    assert_eq!(run(dir, &["test", "nope.nothing"]).code, 2);
    assert_eq!(run(dir, &["list", "nope.nothing"]).code, 2);
}

#[test]
fn exclude_is_absolute_and_force_rebuilds() {
    let ws = lab();
    let dir = ws.path();
    let fresh = errors(dir, &["lab_turnaround", "--exclude", "shared.sites"]);
    assert_eq!(fresh, [("L008".to_string(), Vec::new())]);
    // An excluded ephemeral dependency is inlined: fine even never materialised.
    let (selected, _, required) = selection(
        dir,
        &["result_facts", "--exclude", "assay.staging.valid_results"],
    );
    assert_eq!(selected, strings(&["assay.marts.result_facts"]));
    assert!(required.contains(&"assay.staging.raw_results".to_string()));

    assert_eq!(run(dir, &["run", "shared.sites"]).code, 0);
    let plan = run(
        dir,
        &[
            "plan",
            "--json",
            "lab_turnaround",
            "--exclude",
            "shared.sites",
        ],
    )
    .json();
    let sites = plan["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "shared.sites")
        .unwrap();
    assert_eq!(
        (&sites["decision"], &sites["membership"]),
        (&Value::from("skip"), &Value::from("dependency"))
    );
    assert_eq!(plan["warnings"][0]["code"], "L009");

    let forced = run(dir, &["plan", "--json", "shared.sites", "--force"]).json();
    assert_eq!(forced["models"][0]["decision"], "build");
    assert_eq!(forced["models"][0]["reasons"][0]["kind"], "forced");
    let unforced = run(dir, &["plan", "--json", "shared.sites"]).json();
    assert_eq!(unforced["models"][0]["decision"], "skip");
}

#[test]
fn changed_selects_from_state_and_apply_replans_the_same_selection() {
    let ws = lab();
    let dir = ws.path();
    assert_eq!(run(dir, &["run"]).code, 0);
    assert_eq!(selection(dir, &["--changed"]).0, Vec::<String>::new());
    write_file(
        dir,
        "transforms/shared/calendar.sql",
        &std::fs::read_to_string(dir.join("transforms/shared/calendar.sql"))
            .unwrap()
            .replace("as iso_week", "as iso_week_number"),
    );
    let (selected, _, _) = selection(dir, &["changed"]);
    assert_eq!(
        selected,
        strings(&[
            "shared.calendar",
            "assay.marts.instrument_monthly",
            "manufacturing.site_monthly_yield"
        ])
    );
    let listed = run(dir, &["list", "--json", "--changed", "--tag", "kpi"]).json();
    assert_eq!(
        listed["models"][0]["name"],
        "manufacturing.site_monthly_yield"
    );
    let plan = run(dir, &["plan", "--json", "shared.calendar"]).json();
    let id = plan["plan_id"].as_str().unwrap();
    let applied = run(dir, &["apply", id, "--json"]);
    assert_eq!(applied.code, 0, "{}\n{}", applied.stdout, applied.stderr);
    let report = applied.json();
    let names: Vec<&str> = report["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["shared.calendar"]);
}

fn since(dir: &Path, extra: &[&str]) -> (Vec<String>, Value) {
    let mut args = vec!["plan", "--json", "--since", "main"];
    args.extend(extra);
    let out = run(dir, &args);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let plan = out.json();
    let mut acted = names(&plan["selection"]["matched"]);
    acted.extend(names(&plan["selection"]["expanded"]));
    (sorted(acted), plan["selection"]["git"].clone())
}

#[test]
fn since_selects_the_semantic_changes_of_the_branch() {
    let ws = lab();
    let dir = ws.path();
    git(dir, &["init", "-q", "-b", "main"]);
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "lab"]);
    git(dir, &["checkout", "-q", "-b", "feature"]);
    assert_eq!(since(dir, &[]).0, Vec::<String>::new());

    // Formatting and comments only: nothing.
    let samples = "workflows/assay/transforms/staging/samples.sql";
    let text = std::fs::read_to_string(dir.join(samples)).unwrap();
    write_file(
        dir,
        samples,
        &format!("-- reformatted\n{}", text.replace("    ", "\t")),
    );
    let (acted, git_report) = since(dir, &[]);
    assert_eq!(acted, Vec::<String>::new(), "{git_report}");
    assert_eq!(
        git_report["paths"][0]["effect"],
        "formatting or comments only"
    );

    // A committed semantic edit and an unstaged one: exactly those models.
    let raw = "workflows/assay/transforms/staging/raw_results.sql";
    let text = std::fs::read_to_string(dir.join(raw)).unwrap();
    write_file(
        dir,
        raw,
        &text.replace("r.analyst", "upper(r.analyst) as analyst"),
    );
    git(dir, &["commit", "-q", "-am", "edit"]);
    let sites = "transforms/shared/sites.sql";
    let text = std::fs::read_to_string(dir.join(sites)).unwrap();
    write_file(dir, sites, &text.replace("s.active", "s.active, 1 as one"));
    let (acted, git_report) = since(dir, &[]);
    assert_eq!(
        acted,
        strings(&["assay.staging.raw_results", "shared.sites"]),
        "{git_report}"
    );
    assert_eq!(
        git_report["models"][0]["causes"][0],
        "workflows/assay/transforms/staging/raw_results.sql modified since main"
    );

    // changed+ adds the dependents.
    let (acted, _) = since(dir, &["-s", "changed+"]);
    assert_eq!(
        acted,
        strings(&[
            "assay.marts.batch_quality",
            "assay.marts.instrument_monthly",
            "assay.marts.lab_turnaround",
            "assay.marts.result_facts",
            "assay.staging.raw_results",
            "assay.staging.valid_results",
            "manufacturing.batch_release",
            "manufacturing.release_backlog",
            "manufacturing.site_monthly_yield",
            "shared.instruments",
            "shared.sites"
        ])
    );
    let human = run(dir, &["plan", "--since", "main"]);
    assert!(
        human.stdout.contains(
            "selected because workflows/assay/transforms/staging/raw_results.sql modified since main"
        ),
        "{}",
        human.stdout
    );

    // A deleted model marks its dependents: they now read a source where it used to be.
    write_file(dir, sites, &text);
    git(dir, &["checkout", "-q", "--", "."]);
    std::fs::remove_file(dir.join("transforms/shared/product_specs.sql")).unwrap();
    std::fs::copy(
        dir.join("sources/ref/specs.csv"),
        dir.join("sources/shared/product_specs.csv"),
    )
    .unwrap_or_else(|_| {
        std::fs::create_dir_all(dir.join("sources/shared")).unwrap();
        std::fs::copy(
            dir.join("sources/ref/specs.csv"),
            dir.join("sources/shared/product_specs.csv"),
        )
        .unwrap()
    });
    let (acted, git_report) = since(dir, &[]);
    assert_eq!(
        acted,
        strings(&["assay.marts.result_facts", "assay.staging.raw_results"]),
        "{git_report}"
    );
    assert_eq!(git_report["deleted_models"][0], "shared.product_specs");
}
