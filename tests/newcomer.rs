//! A newcomer's first hour with the example workspace (issue 11): each rough edge they hit,
//! fixed and held in place. Every test works on a fresh copy of examples/lab.

mod common;

use common::{by_name, run, write_file};
use serde_json::Value;
use std::path::Path;

fn lab() -> tempfile::TempDir {
    let ws = tempfile::tempdir().unwrap();
    common::copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/lab"),
        ws.path(),
    );
    ws
}

fn edit(root: &Path, rel: &str, f: impl FnOnce(String) -> String) {
    let path = root.join(rel);
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, f(text)).unwrap();
}

/// Output with the temporary workspace's path and the run's ids and times replaced, so
/// snapshots hold what a person reads.
fn redact(text: &str, root: &Path) -> String {
    text.replace(&root.display().to_string(), "<ws>")
}

// Item 2 ---------------------------------------------------------------------------------------

#[test]
fn clean_removes_every_artifact_and_all_the_state_database_too() {
    let ws = lab();
    assert_eq!(run(ws.path(), &["check"]).code, 0);
    // `check` writes no lineage documents unless they exist (issue 17); `lineage` does.
    assert_eq!(run(ws.path(), &["lineage", "--json"]).code, 0);
    let artifacts = ws.path().join(".phlo/transform");
    assert!(artifacts.join("lineage.json").is_file());
    assert!(artifacts.join("lineage.stamp").is_file());
    assert_eq!(run(ws.path(), &["plan"]).code, 0);

    let out = run(ws.path(), &["clean", "--json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let removed: Vec<String> = out.json()["removed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap().rsplit('/').next().unwrap().to_string())
        .collect();
    for name in ["lineage.json", "manifest.json", "graph.json", "plan.json"] {
        assert!(removed.contains(&name.to_string()), "{removed:?}");
    }
    let left: Vec<String> = std::fs::read_dir(&artifacts)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with("state.db"))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");

    let all = run(ws.path(), &["clean", "--all", "--json"]).json();
    assert!(
        all["removed"][0].as_str().unwrap().ends_with("state.db"),
        "{all}"
    );
    assert!(!artifacts.join("state.db").exists());

    let help = run(ws.path(), &["clean", "--help"]).stdout;
    assert!(help.contains("--all"), "{help}");
    assert!(!help.contains("--state,"), "{help}");
}

// Item 3 ---------------------------------------------------------------------------------------

#[test]
fn every_lineage_column_has_its_type_in_table_order() {
    let ws = lab();
    let graph = run(ws.path(), &["lineage", "--format", "graph", "--json"]).json();
    let nodes = graph["nodes"].as_array().unwrap();
    let columns: Vec<&Value> = nodes.iter().filter(|n| n["kind"] == "column").collect();
    assert!(columns.len() > 150, "{} column nodes", columns.len());
    let untyped: Vec<&str> = columns
        .iter()
        .filter(|n| n["type"].is_null())
        .map(|n| n["name"].as_str().unwrap())
        .collect();
    assert!(untyped.is_empty(), "untyped columns: {untyped:?}");

    // shared.sites is read by models whose names sort before it (assay.*, manufacturing.*):
    // its columns still come in table order, typed, in the OpenLineage schema facet too. The
    // dataset is the Delta table where `default_schema = "analytics"` placed it (item 11).
    let inspect = run(ws.path(), &["inspect", "shared.sites", "--json"]).json();
    let expected = common::column_types(&inspect["schema"]);
    let events = run(ws.path(), &["lineage", "--format", "openlineage"]).json();
    let mut seen = 0;
    for event in events.as_array().unwrap() {
        for side in ["inputs", "outputs"] {
            for ds in event[side].as_array().into_iter().flatten() {
                if !ds["name"]
                    .as_str()
                    .unwrap()
                    .ends_with("/.phlo/warehouse/analytics.shared__sites")
                {
                    continue;
                }
                let fields: Vec<String> = ds["facets"]["schema"]["fields"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|f| {
                        format!(
                            "{}:{}",
                            f["name"].as_str().unwrap(),
                            f["type"].as_str().unwrap()
                        )
                    })
                    .collect();
                assert_eq!(fields, expected, "{side} of {}", event["job"]["name"]);
                seen += 1;
            }
        }
    }
    assert!(seen >= 3, "shared.sites appears in {seen} events");

    let column = run(ws.path(), &["lineage", "shared.sites.has_qc_lab"]);
    assert!(
        column
            .stdout
            .starts_with("shared.sites.has_qc_lab  Boolean\n"),
        "{}",
        column.stdout
    );
}

// Item 4 ---------------------------------------------------------------------------------------

#[test]
fn a_malformed_csv_row_is_r003_at_check_time_and_blocks_only_its_readers() {
    let ws = lab();
    edit(ws.path(), "sources/ref/specs.csv", |t| {
        format!("{t}PX-900,assay_purity,%,98.0,102.0,surplus\n")
    });
    let human = run(ws.path(), &["check"]);
    assert_eq!(human.code, 2, "{}", human.stderr);
    insta::assert_snapshot!("malformed_csv_human", redact(&human.stderr, ws.path()));
    let json = run(ws.path(), &["check", "--json"]).json();
    let r003: Vec<&Value> = json["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["code"] == "R003")
        .collect();
    insta::assert_json_snapshot!("malformed_csv_json", r003);

    // Models that do not read the source still run; its readers are blocked, saying why.
    let out = run(ws.path(), &["run", "--json"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    let report = out.json();
    let status = by_name(&report, "status");
    assert_eq!(status["shared.sites"], "passed");
    assert_eq!(status["shared.product_specs"], "blocked");
    assert_eq!(status["assay.marts.result_facts"], "blocked");
    let specs = report["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "shared.product_specs")
        .unwrap();
    assert_eq!(specs["error"]["code"], "E008");
    assert_eq!(
        specs["error"]["message"],
        "source ref.specs cannot be read (see `phlo-transform check`)"
    );
    let text = run(ws.path(), &["run"]).stdout;
    assert!(!text.contains("datafusion.public"), "{text}");
}

#[test]
fn a_truncated_parquet_source_is_r003_at_check_time() {
    let ws = lab();
    let path = ws.path().join("sources/lims/results.parquet");
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() - 100]).unwrap();
    let out = run(ws.path(), &["check", "--json"]);
    assert_eq!(out.code, 2);
    let d = &out.json()["diagnostics"][0];
    assert_eq!(d["code"], "R003");
    assert_eq!(d["file"], "sources/lims/results.parquet");
    assert!(d["message"].as_str().unwrap().contains("Parquet"), "{d}");
}

// Item 5 ---------------------------------------------------------------------------------------

#[test]
fn removing_a_column_reports_every_reader_at_once() {
    let ws = lab();
    edit(ws.path(), "transforms/shared/sites.sql", |t| {
        t.replace("    s.region,\n", "")
    });
    let out = run(ws.path(), &["check", "--json"]);
    assert_eq!(out.code, 2);
    let mut t001: Vec<String> = out.json()["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["code"] == "T001")
        .map(|d| format!("{}:{}", d["file"].as_str().unwrap(), d["line"]))
        .collect();
    t001.sort();
    // The same three readers `impact shared.sites.region` finds before the change.
    assert_eq!(
        t001,
        [
            "transforms/shared/instruments.sql:9",
            "workflows/assay/transforms/marts/lab_turnaround.sql:13",
            "workflows/manufacturing/transforms/batch_release.sql:11",
        ]
    );
}

// Item 6 ---------------------------------------------------------------------------------------

#[test]
fn read_only_commands_create_nothing() {
    let typo = std::env::temp_dir().join(format!("phlo-typo-{}", std::process::id()));
    let out = run(&typo, &["state", "runs"]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("error[P001]"), "{}", out.stderr);
    assert!(!typo.exists());

    let ws = lab();
    let state = ws.path().join(".phlo/transform/state.db");
    let runs = run(ws.path(), &["state", "runs", "--json"]);
    assert_eq!(runs.code, 0, "{}", runs.stderr);
    assert_eq!(runs.json()["runs"], serde_json::json!([]));
    for args in [
        &["inspect", "shared.sites"][..],
        &["explain", "shared.sites"],
        &["list", "-s", "changed"],
        &["state", "model", "shared.sites"],
    ] {
        run(ws.path(), args);
        assert!(!state.exists(), "{args:?} created the state database");
    }
}

// Item 7 ---------------------------------------------------------------------------------------

#[test]
fn test_says_which_models_are_out_of_date_and_what_it_tested() {
    let ws = lab();
    assert_eq!(run(ws.path(), &["run"]).code, 0);
    edit(
        ws.path(),
        "workflows/assay/transforms/marts/lab_turnaround.sql",
        |t| {
            t.replace(
                "round(avg(p.hours_to_complete), 1)",
                "round(median(p.hours_to_complete), 1)",
            )
        },
    );
    let out = run(ws.path(), &["test", "--json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let report = out.json();
    let models = report["models"].as_array().unwrap();
    let turnaround = models
        .iter()
        .find(|m| m["name"] == "assay.marts.lab_turnaround")
        .unwrap();
    assert_eq!(turnaround["status"], "skipped");
    let outdated = turnaround["outdated"].as_str().unwrap();
    assert!(
        outdated.starts_with("out of date (")
            && outdated.contains("the relation built from version"),
        "{outdated}"
    );
    // Up-to-date models say nothing of the kind.
    assert!(models
        .iter()
        .filter(|m| m["name"] != "assay.marts.lab_turnaround")
        .all(|m| m.get("outdated").is_none()));
    let text = run(ws.path(), &["test"]).stdout;
    assert!(
        text.lines()
            .any(|l| l.starts_with("  SKIPPED  assay.marts.lab_turnaround")
                && l.contains("out of date (")),
        "{text}"
    );
}

// Item 8 ---------------------------------------------------------------------------------------

#[test]
fn an_unrelated_compile_error_does_not_block_a_selection() {
    let ws = lab();
    edit(
        ws.path(),
        "workflows/assay/transforms/marts/lab_turnaround.sql",
        |t| t.replace("f.hours_from_receipt", "f.hours_from_receipts"),
    );
    let out = run(ws.path(), &["run", "-s", "tag:kpi", "--json"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(
        by_name(&out.json(), "status")["manufacturing.site_monthly_yield"],
        "passed"
    );

    let all = run(ws.path(), &["run"]);
    assert_eq!(all.code, 2, "{}", all.stderr);
    assert!(
        all.stdout.contains(
            "does not compile: error[T001] at workflows/assay/transforms/marts/lab_turnaround.sql:6"
        ),
        "{}",
        all.stdout
    );
    assert!(
        all.stdout.contains("PASSED   assay.marts.result_facts"),
        "{}",
        all.stdout
    );
}

// Items 9 and 12 -----------------------------------------------------------------------------

#[test]
fn inspect_and_explain_take_what_selectors_take_and_sources() {
    let ws = lab();
    let suffix = run(ws.path(), &["inspect", "result_facts", "--json"]);
    assert_eq!(suffix.code, 0, "{}", suffix.stderr);
    let model = suffix.json();
    assert_eq!(model["name"], "assay.marts.result_facts");
    assert_eq!(model["kind"], "model");
    assert!(model.get("config").is_none(), "config without --config");
    let with_config = run(
        ws.path(),
        &["inspect", "result_facts", "--config", "--json"],
    )
    .json();
    assert!(with_config["config"].is_object());

    let explain = run(ws.path(), &["explain", "result_facts", "--json"]);
    assert_eq!(explain.code, 0, "{}", explain.stderr);
    assert_eq!(explain.json()["name"], "assay.marts.result_facts");

    let source = run(ws.path(), &["inspect", "lims.samples"]);
    assert_eq!(source.code, 0, "{}", source.stderr);
    // The state identity and the file's modification time change from copy to copy.
    assert!(
        source.stdout.contains("\nCurrent as of: "),
        "{}",
        source.stdout
    );
    let text = source
        .stdout
        .lines()
        .filter(|l| !l.starts_with("State: ") && !l.starts_with("Current as of: "))
        .collect::<Vec<_>>()
        .join("\n");
    insta::assert_snapshot!("inspect_source", text);
}

// Item 10 --------------------------------------------------------------------------------------

#[test]
fn the_other_spelling_is_accepted_with_a_hint() {
    let ws = lab();
    edit(
        ws.path(),
        "workflows/assay/transforms/transform.toml",
        |t| t.replace("materialized = \"table\"", "materialised = \"table\""),
    );
    edit(
        ws.path(),
        "workflows/manufacturing/transforms/batch_release.sql",
        |t| t.replace("-- @table", "-- @materialised table"),
    );
    let out = run(ws.path(), &["check", "--json"]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    let report = out.json();
    let hints: Vec<String> = report["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            let text = |k: &str| d[k].as_str().unwrap().to_string();
            format!(
                "{}[{}] {}:{}: {}",
                text("severity"),
                text("code"),
                text("file"),
                d["line"],
                text("message")
            )
        })
        .collect();
    insta::assert_json_snapshot!("spelling_hints", hints);
    let facts = run(ws.path(), &["inspect", "result_facts", "--json"]).json();
    assert_eq!(facts["materialization"], "table");

    // A key that is no key at all suggests the one it resembles.
    edit(
        ws.path(),
        "workflows/assay/transforms/transform.toml",
        |t| t.replace("materialised = \"table\"", "materalized = \"table\""),
    );
    let typo = run(ws.path(), &["check", "--json"]).json();
    assert_eq!(typo["diagnostics"][0]["code"], "C002");
    assert_eq!(
        typo["diagnostics"][0]["suggestions"],
        serde_json::json!(["materialized"])
    );
}

// Item 11 --------------------------------------------------------------------------------------

#[test]
fn default_schema_places_every_model_on_every_target() {
    let ws = lab();
    let relation = |args: &[&str]| {
        let out = run(ws.path(), args);
        assert_eq!(out.code, 0, "{}", out.stderr);
        out.json()["relation"].as_str().unwrap().to_string()
    };
    // The example's `default_schema = "analytics"`, as `inspect --config` shows it, is where
    // the local engine writes: the relation inspect reports, the table and view files.
    assert_eq!(
        relation(&["inspect", "result_facts", "--json"]),
        "analytics.assay__marts__result_facts"
    );
    let config = run(ws.path(), &["inspect", "result_facts", "--config"]).stdout;
    assert!(
        config
            .lines()
            .any(|l| l.contains("schema") && l.contains("analytics")),
        "{config}"
    );
    let out = run(ws.path(), &["run", "--json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let report = out.json();
    let rows = report["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "assay.marts.result_facts")
        .unwrap()["rows"]
        .clone();
    assert!(rows.as_u64().unwrap() > 0, "{report}");
    let warehouse = ws.path().join(".phlo/warehouse");
    let mut written: Vec<String> = std::fs::read_dir(&warehouse)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    written.sort();
    assert_eq!(written.len(), 14, "{written:?}");
    assert!(
        written.iter().all(|n| n.starts_with("analytics.")),
        "{written:?}"
    );
    assert!(written.contains(&"analytics.shared__instruments.view.json".to_string()));
    // delta-rs's own reader finds the table there, with the rows the run reported.
    let table = warehouse.join("analytics.assay__marts__result_facts");
    let counts = std::process::Command::new("python3")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/delta_counts.py"))
        .arg(&table)
        .output()
        .unwrap();
    assert!(counts.status.success(), "{counts:?}");
    let counts: Value = serde_json::from_slice(&counts.stdout).unwrap();
    assert_eq!(counts[table.to_str().unwrap()]["rows"], rows);
    // A second run finds every model where the first put it.
    let again = run(ws.path(), &["run", "--json"]).json();
    assert!(
        again["models"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m["status"] == "skipped"),
        "{again}"
    );

    // A target's own default_schema wins; a target without one takes the workspace's.
    let url = std::env::var("PHLO_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into());
    edit(ws.path(), "phlo.toml", |t| {
        format!(
            "{t}\n[adapters.elsewhere]\ntype = \"local\"\ndefault_schema = \"lab\"\n\n\
             [adapters.pg]\ntype = \"postgres\"\nurl = \"{url}\"\n"
        )
    });
    assert_eq!(
        relation(&[
            "--adapter",
            "elsewhere",
            "inspect",
            "result_facts",
            "--json"
        ]),
        "lab.assay__marts__result_facts"
    );
    assert_eq!(
        relation(&["--adapter", "pg", "inspect", "result_facts", "--json"]),
        "analytics.assay__marts__result_facts"
    );
}

// Item 13 --------------------------------------------------------------------------------------

#[test]
fn output_cosmetics() {
    let ws = lab();
    let first = run(ws.path(), &["run"]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    let trailing: Vec<&str> = first.stdout.lines().filter(|l| l.ends_with(' ')).collect();
    assert!(trailing.is_empty(), "trailing spaces: {trailing:#?}");
    assert!(
        first.stdout.contains("all — 16 selected (2 ephemeral)"),
        "{}",
        first.stdout
    );
    assert!(first.stdout.contains("Models (14)"), "{}", first.stdout);

    // `state show`: every model line has its columns where the others have them.
    let runs = run(ws.path(), &["state", "runs", "--json"]).json();
    let id = runs["runs"][0]["run_id"].as_str().unwrap().to_string();
    let show = run(ws.path(), &["state", "show", &id]).stdout;
    let models = show.split("\nTests (").next().unwrap();
    let versions: Vec<usize> = models
        .lines()
        .filter(|l| l.starts_with("  passed"))
        .map(|l| l.find("version ").expect("a version column"))
        .collect();
    assert!(versions.len() == 14, "{show}");
    assert!(versions.iter().all(|&v| v == versions[0]), "{show}");

    // inspect --config lines up however long a value is.
    write_file(
        ws.path(),
        "transforms/shared/transform.toml",
        "owner = \"data-platform\"\ntags = [\"reference\", \"a-rather-long-tag-name\", \"another-long-one\"]\n",
    );
    let config = run(ws.path(), &["inspect", "shared.sites", "--config"]).stdout;
    let froms: Vec<usize> = config
        .lines()
        .filter(|l| l.contains(" from "))
        .map(|l| l.find(" from ").unwrap())
        .collect();
    assert!(froms.len() >= 6, "{config}");
    assert!(froms.iter().all(|&f| f == froms[0]), "{config}");

    // A swapped pair of letters in a tag finds the tag.
    let tag = run(ws.path(), &["list", "-s", "tag:kip", "--json"]).json();
    assert_eq!(tag["diagnostics"][0]["code"], "L005");
    assert_eq!(
        tag["diagnostics"][0]["suggestions"],
        serde_json::json!(["kpi"])
    );
}

// Item 4, at run time ---------------------------------------------------------------------------

/// The report of a run of the whole lab on the real local engine, with `break_sources` done to
/// the source files after the engine opened them (as when they change between check and run).
async fn run_with_sources_broken_after_open(break_sources: impl FnOnce(&Path)) -> Value {
    use phlo_transform_adapter::LocalEngine;
    use phlo_transform_compiler::{CatalogSnapshot, Compilation};
    use phlo_transform_exec::{execute, RunOptions};
    use phlo_transform_state::{SqliteStateStore, StateStore};
    use std::sync::Arc;

    let ws = lab();
    let workspace = phlo_transform_project::Workspace::load(ws.path()).unwrap();
    let (catalog, diags) = CatalogSnapshot::load(&workspace);
    let c = Compilation::compile(workspace, catalog, diags);
    assert!(!c.has_errors(), "{:?}", c.diagnostics);
    let (engine, problems) =
        LocalEngine::open(&ws.path().join(".phlo/warehouse"), &c, Some("analytics")).await;
    assert!(problems.is_empty());
    let state: Arc<dyn StateStore> = Arc::new(
        SqliteStateStore::open(&ws.path().join(".phlo/transform/state.db"))
            .await
            .unwrap(),
    );
    let plan = phlo_transform_exec::planning::make_plan(
        &c,
        "local",
        &engine,
        state.as_ref(),
        &Default::default(),
    )
    .await
    .unwrap();
    break_sources(ws.path());
    let report = execute(
        &c,
        &plan,
        Arc::new(engine),
        state,
        &RunOptions::new("run", 2),
    )
    .await
    .unwrap();
    serde_json::to_value(&report).unwrap()
}

/// The failure of `model` in `report`.
fn failure<'a>(report: &'a Value, model: &str) -> &'a Value {
    let m = report["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == model)
        .unwrap();
    assert_eq!(m["status"], "failed", "{m}");
    &m["error"]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_source_broken_after_check_is_r003_naming_it_and_its_file() {
    // A malformed CSV row: the engine said E006 "Csv error: incorrect number of fields for
    // line 14" and blamed the model's SQL file.
    let report = run_with_sources_broken_after_open(|root| {
        let specs = root.join("sources/ref/specs.csv");
        let text = std::fs::read_to_string(&specs).unwrap();
        std::fs::write(
            &specs,
            format!("{text}PX-900,assay_purity,%,98.0,102.0,surplus\n"),
        )
        .unwrap();
    })
    .await;
    let e = failure(&report, "assay.marts.result_facts");
    assert_eq!(e["code"], "R003", "{e}");
    assert_eq!(
        e["message"],
        "source `ref.specs` at `sources/ref/specs.csv` cannot be read: malformed CSV: line 14 \
         has 6 fields where the header has 5"
    );
    assert_eq!(e["file"], "sources/ref/specs.csv");
    assert_eq!(e["retryable"], false);
    assert!(
        e["help"]
            .as_str()
            .unwrap()
            .starts_with("fix or replace the data"),
        "{e}"
    );
    let status = by_name(&report, "status");
    assert_eq!(status["assay.marts.batch_quality"], "blocked");
    assert_eq!(status["shared.sites"], "passed");

    // A corrupt Parquet file: the engine said A006 "Failed to parse parquet".
    let report = run_with_sources_broken_after_open(|root| {
        std::fs::write(
            root.join("sources/lims/results.parquet"),
            b"PAR1 not parquet",
        )
        .unwrap();
    })
    .await;
    let e = failure(&report, "assay.marts.result_facts");
    assert_eq!(e["code"], "R003", "{e}");
    let message = e["message"].as_str().unwrap();
    assert!(
        message
            .starts_with("source `lims.results` at `sources/lims/results.parquet` cannot be read:"),
        "{message}"
    );
    assert_eq!(e["file"], "sources/lims/results.parquet");
    assert!(
        !report.to_string().contains("datafusion.public"),
        "{report}"
    );
}
