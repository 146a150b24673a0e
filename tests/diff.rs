//! `diff <model>` end to end: build a model, change its SQL, and the diff reports exactly
//! the known added / removed / modified rows and per-column counts (SPEC §52–54).

mod common;

use common::{run, write_file};
use serde_json::Value;
use std::path::Path;

const RESULTS: &str = "site,sample_id,conc,status,keep\nA,1,1.0,ok,1\nA,2,2.0,ok,1\nB,1,3.0,ok,1\nB,2,4.0,bad,1\nB,3,5.0,ok,1\nC,1,6.0,ok,1\nD,1,7.0,ok,0\n";

/// The base definition: (B,1) has a NULL status, every row a `lot`.
const RESULTS_V1: &str = "-- @table\n-- @key site, sample_id\nselect site, sample_id, conc,\n  case when site = 'B' and sample_id = 1 then null else status end as status,\n  'L1' as lot\nfrom raw.results where keep = 1\n";

/// The candidate: (A,2) conc +0.0004 (within --decimals 3), (B,2) conc +0.5, (C,1) status
/// NULL, (B,3) gone, (D,1) new; `lot` dropped, `batch` added, `sample_id` retyped to INT.
const RESULTS_V2: &str = "-- @table\n-- @key site, sample_id\nselect site, cast(sample_id as int) as sample_id,\n  case when site = 'A' and sample_id = 2 then conc + 0.0004 when site = 'B' and sample_id = 2 then conc + 0.5 else conc end as conc,\n  case when site = 'B' and sample_id = 1 then null when site = 'C' then null else status end as status,\n  1 as batch\nfrom raw.results where not (site = 'B' and sample_id = 3)\n";

fn workspace(policy: &str) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path();
    write_file(ws, "phlo.toml", &format!("[transform]\n{policy}"));
    write_file(ws, "sources/raw/results.csv", RESULTS);
    write_file(ws, "transforms/lab/results.sql", RESULTS_V1);
    tmp
}

fn ok_run(ws: &Path) {
    let out = run(ws, &["run"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
}

fn diff_json(ws: &Path, args: &[&str], code: i32) -> Value {
    let mut all = vec!["--json", "diff"];
    all.extend_from_slice(args);
    let out = run(ws, &all);
    assert_eq!(out.code, code, "{}\n{}", out.stdout, out.stderr);
    out.json()
}

fn records(r: &Value) -> (u64, u64, u64, u64) {
    let n = |k: &str| r["records"][k].as_u64().unwrap();
    (n("added"), n("removed"), n("modified"), n("unchanged"))
}

#[test]
fn composite_key_change_reports_exact_counts() {
    let tmp = workspace("");
    let ws = tmp.path();
    ok_run(ws);
    // Unchanged SQL: identical.
    let r = diff_json(ws, &["lab.results"], 0);
    assert_eq!(records(&r), (0, 0, 0, 6));
    assert_eq!(r["key"], serde_json::json!(["site", "sample_id"]));
    assert_eq!(r["key_inferred"], false);
    assert_eq!(r["key_source"], "model");
    // The declared @key (NOT NULL in the table) stands for the query side's nullability.
    assert_eq!(r["schema"]["nullability"], serde_json::json!([]));

    write_file(ws, "transforms/lab/results.sql", RESULTS_V2);
    let r = diff_json(ws, &["lab.results", "--decimals", "3"], 0);
    assert_eq!(r["strategy"], "full");
    assert_eq!(r["rows"]["base"], 6);
    assert_eq!(r["rows"]["candidate"], 6);
    assert_eq!(records(&r), (1, 1, 2, 3));
    assert_eq!(r["changed_values"]["conc"], 1);
    assert_eq!(r["changed_values"]["status"], 1);
    assert_eq!(r["schema"]["added"][0]["name"], "batch");
    assert_eq!(r["schema"]["removed"][0]["name"], "lot");
    assert_eq!(r["schema"]["retyped"][0]["name"], "sample_id");
    assert_eq!(r["policy"]["passed"], true);
    assert_eq!(r["samples"]["added"][0]["key"]["site"], "D");
    assert_eq!(r["samples"]["removed"][0]["key"]["sample_id"], 3);
    // The warehouse table is untouched: it still holds the base definition.
    let r = diff_json(ws, &["lab.results", "--to", "materialized"], 0);
    assert_eq!(records(&r), (0, 0, 0, 6));
    // main as a reference side (no environment created: its own tables) is the same base.
    let r = diff_json(
        ws,
        &["lab.results", "--from", "ref:main", "--decimals", "3"],
        0,
    );
    assert_eq!(records(&r), (1, 1, 2, 3));
    let base = r["base"]["description"].as_str().unwrap();
    assert!(
        base.starts_with("lab.results in `main` (Delta version 0"),
        "{base}"
    );

    // Exact floats: (A,2) is modified too.
    let r = diff_json(ws, &["lab.results", "--full"], 0);
    assert_eq!(records(&r), (1, 1, 3, 2));
    assert_eq!(r["changed_values"]["conc"], 2);

    // The partition strategy finds the same, comparing only the partitions that differ.
    let r = diff_json(
        ws,
        &["lab.results", "--strategy", "partition", "--decimals", "3"],
        0,
    );
    assert_eq!(r["strategy"], "partition");
    assert_eq!(records(&r), (1, 1, 2, 3));
    assert!(
        r["partitions"]["compared"].as_u64().unwrap() <= 5,
        "{}",
        r["partitions"]
    );
    // A key-hash sample of every key is the full comparison.
    let r = diff_json(
        ws,
        &[
            "lab.results",
            "--strategy",
            "sampled",
            "--sample",
            "1",
            "--decimals",
            "3",
        ],
        0,
    );
    assert_eq!(records(&r), (1, 1, 2, 3));
    // --exclude leaves a column out of the comparison.
    let r = diff_json(
        ws,
        &["lab.results", "--exclude", "status", "--decimals", "3"],
        0,
    );
    assert_eq!(records(&r), (1, 1, 1, 4));
    assert_eq!(r["changed_values"].get("status"), None);

    // The text report (SPEC §52's layout).
    let out = run(ws, &["diff", "lab.results", "--decimals", "3"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    for line in [
        "Rows",
        "Records",
        "  added      1",
        "  removed    1",
        "  modified   2",
        "Changed values",
        "  conc    1",
        "  status  1",
    ] {
        assert!(
            out.stdout.contains(line),
            "{line:?} missing:\n{}",
            out.stdout
        );
    }
}

#[test]
fn policies_fail_with_codes_and_exit_1() {
    let tmp = workspace(
        "\n[model.\"lab.results\".diff]\nmax_removed_rows = 0\nmax_changed_fraction = 0.25\n\n[model.\"lab.results\".diff.columns.conc]\ntolerance = 0.001\n",
    );
    let ws = tmp.path();
    ok_run(ws);
    write_file(ws, "transforms/lab/results.sql", RESULTS_V2);
    let r = diff_json(ws, &["lab.results"], 1);
    // The column tolerance from phlo.toml applies: (A,2) is unchanged.
    assert_eq!(records(&r), (1, 1, 2, 3));
    assert_eq!(r["policy"]["passed"], false);
    let codes: Vec<&str> = r["policy"]["violations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["code"].as_str().unwrap())
        .collect();
    // 1 removed > 0; (1 + 1 + 2) / 6 > 0.25.
    assert_eq!(codes, ["D010", "D012"]);
    let out = run(ws, &["diff", "lab.results"]);
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("D010"), "{}", out.stderr);
}

#[test]
fn nulls_in_keys_and_duplicates_are_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path();
    write_file(
        ws,
        "phlo.toml",
        "[transform]\n\n[model.\"lab.readings\".diff]\nmax_removed_rows = 5\n",
    );
    write_file(
        ws,
        "sources/raw/readings.csv",
        "k,part,v\n1,a,10\n2,a,20\n3,a,30\n4,a,40\n3,a,31\n5,a,50\n2,a,21\n",
    );
    // Base: key (k2, part) where k2 is NULL for k = 1; key 3 twice.
    write_file(
        ws,
        "transforms/lab/readings.sql",
        "-- @table\nselect case when k = 1 then null else k end as k2, part, v from raw.readings\nwhere k <> 5 and not (k = 2 and v = 21)\n",
    );
    ok_run(ws);
    // Candidate: the NULL-keyed row changes value, key 2 appears twice, 4 goes, 5 comes.
    write_file(
        ws,
        "transforms/lab/readings.sql",
        "-- @table\nselect case when k = 1 then null else k end as k2, part, case when k = 1 then 11 else v end as v from raw.readings where k <> 4\n",
    );
    let r = diff_json(ws, &["lab.readings", "--key", "k2,part"], 1);
    assert_eq!(r["key_source"], "option");
    // NULL key matched NULL key (modified); 4 removed; 5 added; 2 and 3 duplicated.
    assert_eq!(records(&r), (1, 1, 1, 0));
    assert_eq!(r["samples"]["modified"][0]["key"]["k2"], Value::Null);
    assert_eq!(r["duplicates"]["base"]["keys"], 1);
    assert_eq!(r["duplicates"]["base"]["rows"], 2);
    assert_eq!(r["duplicates"]["candidate"]["keys"], 2);
    assert_eq!(r["duplicates"]["candidate"]["rows"], 4);
    assert_eq!(r["warnings"][0]["code"], "D005");
    // The row threshold could not be measured over duplicated keys: it fails.
    assert_eq!(r["policy"]["violations"][0]["code"], "D013");
}

#[test]
fn keyless_models_get_aggregates_and_inferred_keys_are_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path();
    write_file(
        ws,
        "phlo.toml",
        "[transform]\n\n[model.\"lab.flat\".diff]\nmax_added_rows = 100\n",
    );
    write_file(
        ws,
        "sources/raw/readings.csv",
        "k,site,v\n1,a,10\n2,a,20\n3,b,30\n",
    );
    write_file(
        ws,
        "transforms/lab/flat.sql",
        "-- @table\nselect site, v, v / 4.0 as ratio from raw.readings\n",
    );
    write_file(
        ws,
        "transforms/lab/by_site.sql",
        "-- @table\nselect site, sum(v) as total, count(*) as n from raw.readings group by site\n",
    );
    ok_run(ws);
    write_file(
        ws,
        "transforms/lab/flat.sql",
        "-- @table\nselect site, v * 2 as v, v / 4.0 as ratio from raw.readings\n",
    );
    write_file(
        ws,
        "transforms/lab/by_site.sql",
        "-- @table\nselect site, sum(v) + case when site = 'b' then 1 else 0 end as total, count(*) as n from raw.readings group by site\n",
    );
    // Keyless: counts and aggregates; the row threshold fails rather than passing.
    let r = diff_json(ws, &["lab.flat"], 1);
    assert_eq!(r["strategy"], "aggregate");
    assert_eq!(r["records"], Value::Null);
    assert_eq!(r["key_source"], "none");
    assert_eq!(r["rows"]["base"], 3);
    assert_eq!(r["aggregates"][1]["column"], "v");
    assert_eq!(r["aggregates"][1]["base"]["sum"], 60);
    assert_eq!(r["aggregates"][1]["candidate"]["sum"], 120);
    // A float column is aggregated too (approximate distinct included), and unchanged.
    assert_eq!(r["aggregates"][2]["column"], "ratio");
    assert_eq!(r["aggregates"][2]["base"]["approx_distinct"], 3);
    assert_eq!(r["aggregates"][2]["differs"], serde_json::json!([]));
    assert_eq!(r["policy"]["violations"][0]["code"], "D013");
    // GROUP BY site: the key is inferred from the plan.
    let r = diff_json(ws, &["lab.by_site"], 0);
    assert_eq!(r["key"], serde_json::json!(["site"]));
    assert_eq!(r["key_inferred"], true);
    assert_eq!(r["key_from"], "group by");
    assert_eq!(records(&r), (0, 0, 1, 1));
    assert_eq!(r["changed_values"]["total"], 1);
    assert_eq!(r["changed_values"]["n"], 0);
}

#[test]
fn versions_time_travel_and_output() {
    let tmp = workspace("");
    let ws = tmp.path();
    ok_run(ws);
    write_file(ws, "transforms/lab/results.sql", RESULTS_V2);
    ok_run(ws);
    // The table now holds V2. V1's data write is the first commit recording a run generation
    // (a data commit: the table's creation holds its first rows) and a model version (an
    // independent read of the Delta log).
    let log = ws.join(".phlo/warehouse/lab.results/_delta_log");
    let (v1_delta, v1) = (0..10)
        .find_map(|n| {
            let text = std::fs::read_to_string(log.join(format!("{n:020}.json"))).ok()?;
            text.lines()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .filter(|v| !v["commitInfo"]["phlo.generation"].is_null())
                .find_map(|v| {
                    v["commitInfo"]["phlo.model_version"]
                        .as_str()
                        .map(str::to_string)
                })
                .map(|mv| (n, mv))
        })
        .expect("a commit records its model version");
    let from = format!("delta:{v1_delta}");
    let r = diff_json(
        ws,
        &[
            "lab.results",
            "--from",
            &from,
            "--to",
            "materialized",
            "--decimals",
            "3",
        ],
        0,
    );
    assert_eq!(records(&r), (1, 1, 2, 3));
    // The recorded model version names that Delta version.
    let r = diff_json(
        ws,
        &[
            "lab.results",
            "--from",
            &v1[..10],
            "--to",
            "materialized",
            "--decimals",
            "3",
        ],
        0,
    );
    assert_eq!(records(&r), (1, 1, 2, 3));
    let described = format!("Delta version {v1_delta})");
    assert!(
        r["base"]["description"]
            .as_str()
            .unwrap()
            .contains(&described),
        "{}",
        r["base"]
    );
    // Delta time travel by timestamp: now is the materialised state; before the table, D001.
    let now = chrono_now();
    let r = diff_json(
        ws,
        &[
            "lab.results",
            "--from",
            &format!("delta:{now}"),
            "--to",
            "materialized",
        ],
        0,
    );
    assert_eq!(records(&r), (0, 0, 0, 6));
    let out = run(
        ws,
        &[
            "diff",
            "lab.results",
            "--from",
            "delta:2001-01-01T00:00:00Z",
        ],
    );
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("D001") && out.stderr.contains("did not exist"),
        "{}",
        out.stderr
    );
    // Differing rows as Parquet: 1 added + 1 removed + 2 modified × 2 sides.
    let file = ws.join("diff.parquet");
    let r = diff_json(
        ws,
        &[
            "lab.results",
            "--from",
            &from,
            "--to",
            "materialized",
            "--decimals",
            "3",
            "--output",
            file.to_str().unwrap(),
        ],
        0,
    );
    assert_eq!(r["output"], file.to_str().unwrap());
    let read = std::process::Command::new("python3")
        .args([
            "-c",
            "import sys, pyarrow.parquet as pq; t = pq.read_table(sys.argv[1]); print(t.num_rows, sorted(t.column('_diff').to_pylist()))",
            file.to_str().unwrap(),
        ])
        .output()
        .expect("python3 with pyarrow (python3 -m pip install pyarrow)");
    assert!(
        read.status.success(),
        "{}",
        String::from_utf8_lossy(&read.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&read.stdout).trim(),
        "6 ['added', 'modified', 'modified', 'modified', 'modified', 'removed']"
    );
}

#[test]
fn bad_input_gets_coded_errors() {
    let tmp = workspace("");
    let ws = tmp.path();
    // Not built yet: the base side cannot be read.
    let out = run(ws, &["--json", "diff", "lab.results"]);
    assert_eq!(out.code, 2);
    assert!(out.stdout.contains("D004"), "{}", out.stdout);
    ok_run(ws);
    for (args, code) in [
        (vec!["diff", "lab.resluts"], "P008"),
        (vec!["diff", "lab.results", "--from", "delta:42"], "D001"),
        (vec!["diff", "lab.results", "--from", "feature/x"], "D001"),
        (vec!["diff", "lab.results", "--from", "abcdef99"], "D001"),
        (vec!["diff", "lab.results", "--from", "ref:"], "D001"),
        (vec!["diff", "lab.results", "--to", "ref:nope"], "Y007"),
        (vec!["diff", "lab.results", "--from", "iceberg:5"], "D001"),
        (vec!["diff", "lab.results", "--key", "site,nope"], "D002"),
        (vec!["diff", "lab.results", "--strategy", "fastest"], "D006"),
    ] {
        let out = run(ws, &args);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains(code), "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains("help"), "{args:?}: {}", out.stderr);
    }
}

/// The current time as RFC 3339 (UTC), from `date`.
fn chrono_now() -> String {
    // The timestamp is whole seconds: wait a second so it is not earlier than a commit made
    // within the current second (on a fast machine the last write is that recent).
    std::thread::sleep(std::time::Duration::from_secs(1));
    let out = std::process::Command::new("date")
        .args(["-u", "+%Y-%m-%dT%H:%M:%SZ"])
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}
