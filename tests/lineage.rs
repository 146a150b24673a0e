//! `lineage` and `impact` end to end: the real binary over testdata/lineage (schema-only
//! sources, one model per plan node type), examples/lab and the TPC-H queries.

mod common;

use common::{run, testdata, workspace};
use serde_json::Value;

/// `v[i][key]` of every element of the array `v`.
fn field<'a>(v: &'a Value, key: &str) -> Vec<&'a str> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x[key].as_str().unwrap())
        .collect()
}

fn names(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| {
            x.as_str()
                .map(str::to_string)
                .unwrap_or_else(|| x["column"].as_str().unwrap().to_string())
        })
        .collect()
}

#[test]
fn column_lineage_separates_direct_and_indirect_inputs() {
    let out = run(
        &testdata("lineage"),
        &["--json", "lineage", "cases.scalar_subquery.total"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let r = out.json();
    assert_eq!(r["column"], "cases.scalar_subquery.total");
    assert_eq!(r["type"], "Float64");
    assert_eq!(r["confidence"], "exact");
    assert_eq!(names(&r["direct"]), ["raw.orders.amount"]);
    assert_eq!(r["direct"][0]["transformation"], "aggregation");
    assert_eq!(r["direct"][0]["expression"], "sum(o.amount)");
    let mut indirect = names(&r["indirect"]);
    indirect.sort();
    assert_eq!(indirect, ["raw.customers.id", "raw.orders.customer_id"]);

    let text = run(
        &testdata("lineage"),
        &["lineage", "cases.chain.total_cents"],
    );
    assert_eq!(text.code, 0, "{}", text.stderr);
    // The chain goes through the ephemeral model's column to the source column.
    let chain: Vec<&str> = text.stdout.lines().map(str::trim).collect();
    let at = |s: &str| {
        chain
            .iter()
            .position(|l| *l == s)
            .unwrap_or_else(|| panic!("{s} missing:\n{}", text.stdout))
    };
    assert!(at("raw.orders.amount") < at("cases.base.cents"));
    assert!(at("cases.base.cents") < at("cases.chain.total_cents"));
}

#[test]
fn model_lineage_shows_the_chain_and_every_column() {
    let out = run(&testdata("lineage"), &["--json", "lineage", "cases.base"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let r = out.json();
    assert_eq!(r["origin"], "model");
    let up: Vec<&str> = field(&r["upstream"], "name");
    assert_eq!(up, ["raw.orders"]);
    let down: Vec<&str> = field(&r["downstream"], "name");
    assert_eq!(down, ["cases.chain"]);
    let cols: Vec<&str> = field(&r["columns"], "name");
    assert_eq!(cols, ["id", "customer_id", "cents"]);
}

#[test]
fn impact_of_a_source_column_reaches_models_tests_and_workflows() {
    let out = run(
        &testdata("../examples/lab"),
        &["--json", "impact", "lims.results.result_value"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let r = out.json();
    let models = names(&r["models"]);
    assert!(
        models.contains(&"assay.staging.raw_results".to_string()),
        "{models:?}"
    );
    assert!(models.contains(&"assay.marts.result_facts".to_string()));
    let columns = &r["columns"];
    let find = |name: &str| {
        columns
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["column"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name} not reached: {columns:#}"))
    };
    assert_eq!(
        find("assay.marts.result_facts.result_value")["via"],
        "direct"
    );
    // in_spec compares the value with limits: derived from it, not copied.
    assert_eq!(find("assay.marts.result_facts.in_spec")["via"], "direct");
    // A column the source column does not feed is not reported.
    assert!(columns
        .as_array()
        .unwrap()
        .iter()
        .all(|c| c["column"] != "assay.marts.result_facts.lower_limit"));
    assert!(!names(&r["workflows"]).is_empty());
    assert!(!names(&r["tests"]).is_empty());
}

#[test]
fn impact_of_a_model_lists_every_downstream_model() {
    let out = run(&testdata("lineage"), &["--json", "impact", "cases.base"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(names(&out.json()["models"]), ["cases.chain"]);
}

#[test]
fn graph_format_prints_the_canonical_document_scoped_to_the_target() {
    let out = run(
        &testdata("lineage"),
        &["lineage", "cases.chain", "--format", "graph"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let doc = out.json();
    assert_eq!(doc["version"], 1);
    let ids: Vec<&str> = field(&doc["nodes"], "id");
    for id in [
        "dataset://raw.orders",
        "dataset://cases.base",
        "model://cases/base",
        "dataset://cases.chain#total_cents",
    ] {
        assert!(ids.contains(&id), "{id} missing from {ids:?}");
    }
    assert!(!ids.contains(&"dataset://cases.window"), "out of scope");
    let derives = doc["edges"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["to"] == "dataset://cases.chain#total_cents" && e["directness"] == "direct")
        .expect("derives edge");
    assert_eq!(derives["from"], "dataset://cases.base#cents");
    assert_eq!(derives["transformation"], "aggregation");
    assert_eq!(derives["confidence"], "exact");
}

#[test]
fn unknown_targets_are_coded_errors_with_suggestions() {
    let out = run(
        &testdata("lineage"),
        &["--json", "impact", "raw.orders.amont"],
    );
    assert_eq!(out.code, 2);
    let d = &out.json()["diagnostics"][0];
    assert_eq!(d["code"], "P008");
    assert_eq!(d["suggestions"][0], "raw.orders.amount");
    let text = run(&testdata("lineage"), &["lineage", "nope.nothing"]);
    assert_eq!(text.code, 2);
    assert!(text.stderr.contains("P008"), "{}", text.stderr);
}

#[test]
fn lineage_writes_lineage_json_and_inspect_shows_column_sources() {
    let ws = workspace("lineage");
    assert_eq!(run(ws.path(), &["lineage"]).code, 0);
    let doc: Value = serde_json::from_slice(
        &std::fs::read(ws.path().join(".phlo/transform/lineage.json")).unwrap(),
    )
    .unwrap();
    assert!(doc["edges"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["kind"] == "derives"));
    let out = run(ws.path(), &["inspect", "cases.join_key_only"]);
    assert!(
        out.stdout
            .lines()
            .any(|l| l.contains("name") && l.contains("← raw.customers.name")),
        "{}",
        out.stdout
    );
    let json = run(ws.path(), &["--json", "inspect", "cases.join_key_only"]).json();
    let col = &json["column_lineage"][1];
    assert_eq!(col["name"], "name");
    assert_eq!(
        col["indirect"],
        serde_json::json!(["raw.customers.id", "raw.orders.customer_id"])
    );
}

/// Spot checks over TPC-H: exact lineage on real analytical SQL.
#[test]
fn tpch_spot_checks() {
    let dir = testdata("tpch");
    let r = run(&dir, &["--json", "lineage", "tpch.q01.sum_disc_price"]).json();
    let mut direct = names(&r["direct"]);
    direct.sort();
    assert_eq!(
        direct,
        ["tpch.lineitem.l_discount", "tpch.lineitem.l_extendedprice"]
    );
    assert_eq!(r["direct"][0]["transformation"], "aggregation");
    let indirect = names(&r["indirect"]);
    assert!(
        indirect.contains(&"tpch.lineitem.l_shipdate".to_string()),
        "{indirect:?}"
    );
    assert!(
        indirect.contains(&"tpch.lineitem.l_returnflag".to_string()),
        "{indirect:?}"
    );

    // Q4: EXISTS over a correlated subquery: lineitem columns are indirect only.
    let r = run(&dir, &["--json", "lineage", "tpch.q04.order_count"]).json();
    let indirect = names(&r["indirect"]);
    assert!(
        indirect.contains(&"tpch.lineitem.l_commitdate".to_string()),
        "{indirect:?}"
    );
    assert!(
        indirect.contains(&"tpch.lineitem.l_orderkey".to_string()),
        "{indirect:?}"
    );
    assert!(names(&r["direct"]).is_empty(), "count(*) reads no column");

    let impact = run(&dir, &["--json", "impact", "tpch.lineitem.l_discount"]).json();
    let models = names(&impact["models"]);
    for q in ["tpch.q01", "tpch.q03", "tpch.q05", "tpch.q06", "tpch.q19"] {
        assert!(
            models.contains(&q.to_string()),
            "{q} missing from {models:?}"
        );
    }
    assert!(
        !models.contains(&"tpch.q04".to_string()),
        "Q4 does not read l_discount"
    );
}

#[test]
fn openlineage_format_is_scoped_to_the_target() {
    let out = run(
        &testdata("lineage"),
        &["lineage", "cases.chain", "--format", "openlineage"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let events = out.json();
    let jobs: Vec<&str> = events
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e.get("job").is_some())
        .map(|e| e["job"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(jobs, ["cases.base", "cases.chain"]);
    let datasets = events
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e.get("dataset").is_some())
        .count();
    assert_eq!(datasets, 1, "only raw.orders is upstream");
    let all = run(
        &testdata("lineage"),
        &["lineage", "--format", "openlineage"],
    )
    .json();
    assert!(all.as_array().unwrap().len() > events.as_array().unwrap().len());
}

#[test]
fn selectors_scope_the_document() {
    let dir = testdata("lineage");
    let doc = run(
        &dir,
        &["lineage", "--format", "graph", "-s", "cases.window"],
    )
    .json();
    let ids: Vec<&str> = field(&doc["nodes"], "id");
    assert!(ids.contains(&"dataset://cases.window#rn"), "{ids:?}");
    assert!(ids.contains(&"dataset://raw.orders"));
    assert!(!ids.contains(&"dataset://cases.chain"));
    let text = run(&dir, &["lineage", "-s", "cases.base+"]);
    assert_eq!(text.code, 0, "{}", text.stderr);
    let lines: Vec<&str> = text.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{}", text.stdout);
    let bad = run(&dir, &["--json", "lineage", "-s", "cases.nope"]);
    assert_eq!(bad.code, 2);
    assert_eq!(bad.json()["diagnostics"][0]["code"], "L005");
}

/// `impact -s changed --since main`: the blast radius of a branch's edits.
#[test]
fn impact_of_a_diff() {
    let ws = workspace("lineage");
    let dir = ws.path();
    common::git(dir, &["init", "-q", "-b", "main"]);
    common::git(dir, &["add", "-A"]);
    common::git(dir, &["commit", "-q", "-m", "cases"]);
    common::write_file(
        dir,
        "transforms/cases/base.sql",
        "-- @ephemeral\nselect id, customer_id, amount * 1000 as cents from raw.orders\n",
    );
    let out = run(
        dir,
        &["--json", "impact", "-s", "changed", "--since", "main"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let r = out.json();
    assert_eq!(r["target"], "cases.base");
    assert_eq!(names(&r["models"]), ["cases.chain"]);
    let none = run(dir, &["--json", "impact"]);
    assert_eq!(none.code, 2);
    assert_eq!(none.json()["diagnostics"][0]["code"], "L004");
}

/// Issue 17: `check` creates no lineage documents, rewrites current ones never, and keeps
/// existing ones current when the workspace changes.
#[test]
fn check_writes_lineage_documents_only_when_they_exist_and_are_stale() {
    let ws = workspace("lineage");
    let dir = ws.path().join(".phlo/transform");
    assert_eq!(run(ws.path(), &["check"]).code, 0);
    assert!(dir.join("manifest.json").is_file());
    assert!(!dir.join("lineage.json").exists());
    assert!(!dir.join("openlineage.json").exists());

    assert_eq!(run(ws.path(), &["lineage"]).code, 0);
    let modified = |name: &str| {
        std::fs::metadata(dir.join(name))
            .unwrap()
            .modified()
            .unwrap()
    };
    let (lineage, events) = (modified("lineage.json"), modified("openlineage.json"));
    assert_eq!(run(ws.path(), &["check"]).code, 0);
    assert_eq!(
        modified("lineage.json"),
        lineage,
        "a current document is not rewritten"
    );
    assert_eq!(modified("openlineage.json"), events);

    // A new model makes both stale: `check` brings them up to date.
    std::fs::write(
        ws.path().join("transforms/cases/added_by_test.sql"),
        "select id from raw.orders\n",
    )
    .unwrap();
    assert_eq!(run(ws.path(), &["check"]).code, 0);
    let doc: Value =
        serde_json::from_slice(&std::fs::read(dir.join("lineage.json")).unwrap()).unwrap();
    assert!(doc["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .any(|n| n["name"] == "cases.added_by_test"));
    let events = std::fs::read_to_string(dir.join("openlineage.json")).unwrap();
    assert!(events.contains("cases.added_by_test"));
}

/// A repository whose workspace (in `ws/`) has a history: `before` (no workspace yet), then
/// `main`, then branch `feature` checked out, which renames a column, removes a column a
/// downstream model reads and adds a filter (new lineage edges). Returns the repository and
/// the workspace.
fn repository_with_history() -> (tempfile::TempDir, std::path::PathBuf) {
    let repo = tempfile::tempdir().unwrap();
    let dir = repo.path();
    let ws = dir.join("ws");
    common::git(dir, &["init", "-q", "-b", "main"]);
    common::write_file(dir, "README", "history\n");
    common::write_file(dir, ".gitignore", ".phlo/\n");
    common::git(dir, &["add", "-A"]);
    common::git(dir, &["commit", "-q", "-m", "before the workspace"]);
    common::git(dir, &["tag", "before"]);
    common::write_file(
        &ws,
        "phlo.toml",
        "[source.\"raw.orders\".columns]\nid = \"bigint\"\ncustomer_id = \"bigint\"\n\
         amount = \"double\"\nstatus = \"varchar\"\n",
    );
    common::write_file(
        &ws,
        "transforms/shop/orders.sql",
        "select id, customer_id, amount from raw.orders\n",
    );
    common::write_file(
        &ws,
        "transforms/shop/report.sql",
        "select customer_id, sum(amount) as total from shop.orders group by customer_id\n",
    );
    common::write_file(
        &ws,
        "transforms/shop/customers.sql",
        "select customer_id as cid from shop.orders\n",
    );
    common::git(dir, &["add", "-A"]);
    common::git(dir, &["commit", "-q", "-m", "workspace"]);
    common::git(dir, &["checkout", "-q", "-b", "feature"]);
    common::write_file(
        &ws,
        "transforms/shop/orders.sql",
        "select id, customer_id from raw.orders where status = 'paid'\n",
    );
    common::write_file(
        &ws,
        "transforms/shop/customers.sql",
        "select customer_id as customer from shop.orders\n",
    );
    common::git(dir, &["commit", "-q", "-a", "-m", "feature"]);
    (repo, ws)
}

/// Issue 41: `lineage --diff <ref>` compiles the workspace at merge-base(ref, HEAD) from Git's
/// objects and reports the rename, the removed column with the reader it orphans and the new
/// edges; the work tree, the index and HEAD are left as they were.
#[test]
fn lineage_diff_against_a_git_ref() {
    let (repo, ws) = repository_with_history();
    let dir = repo.path();
    let head = common::git_out(dir, &["rev-parse", "HEAD"]);
    let base = common::git_out(dir, &["rev-parse", "main"]);
    let index = std::fs::read(dir.join(".git/index")).unwrap();

    let out = run(&ws, &["--json", "lineage", "--diff", "main"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let mut r = out.json();
    // The report reader's compile error is the candidate's, reported beside the diff.
    let diagnostics = r.as_object_mut().unwrap().remove("diagnostics").unwrap();
    assert_eq!(field(&diagnostics, "code"), ["T001"]);
    assert_eq!(diagnostics[0]["file"], "transforms/shop/report.sql");
    let edge = |from: &str, to: &str, directness: &str, transformation: &str, expr: &str| {
        serde_json::json!({"from": from, "to": to, "kind": "derives", "directness": directness,
            "transformation": transformation, "expression": expr})
    };
    let filter = "orders.status = Utf8(\"paid\")";
    let mut removed_edge = edge(
        "dataset://raw.orders#amount",
        "dataset://shop.orders#amount",
        "direct",
        "identity",
        "",
    );
    // An identity edge carries no expression.
    removed_edge.as_object_mut().unwrap().remove("expression");
    let expected = serde_json::json!({
        "base": {"requested_ref": "main", "commit": base, "head": head, "worktree_dirty": false},
        "base_errors": 0,
        "models": {"added": [], "removed": [], "renamed": [], "changed": []},
        "sources": {"added": [], "removed": []},
        "columns": {
            "added": [],
            "removed": [{"dataset": "shop.orders", "column": "amount", "type": "Float64"}],
            "renamed": [{"dataset": "shop.customers", "from": "cid", "to": "customer"}],
            "retyped": []
        },
        "edges": {
            "added": [
                edge("dataset://raw.orders#status", "dataset://shop.orders#customer_id",
                    "indirect", "filter", filter),
                edge("dataset://raw.orders#status", "dataset://shop.orders#id",
                    "indirect", "filter", filter),
            ],
            "removed": [removed_edge]
        },
        "orphaned": [{
            "removed": "dataset://shop.orders#amount",
            "change": "removed",
            "consumers": [{"id": "dataset://shop.report#total", "kind": "column",
                "status": "lineage_unknown"}]
        }],
        "unknown": [{"model": "shop.report", "base": null, "candidate": "the model has errors"}]
    });
    assert_eq!(r, expected, "{}", serde_json::to_string_pretty(&r).unwrap());

    // Nothing of the repository moved: no index write, no checkout, no stray files.
    assert_eq!(std::fs::read(dir.join(".git/index")).unwrap(), index);
    assert_eq!(common::git_out(dir, &["rev-parse", "HEAD"]), head);
    assert_eq!(common::git_out(dir, &["status", "--porcelain"]), "");

    let text = run(&ws, &["lineage", "--diff", "main"]);
    assert_eq!(text.code, 0, "{}", text.stderr);
    for line in [
        "  ~ shop.customers.cid → customer (renamed)",
        "  - shop.orders.amount  Float64",
        "  shop.orders.amount was read by:",
        "    shop.report.total (column, lineage unknown now)",
    ] {
        assert!(text.stdout.contains(line), "{line}:\n{}", text.stdout);
    }

    // Work-tree edits are the candidate: a new untracked model is added, the tree dirty.
    common::write_file(
        &ws,
        "transforms/shop/paid.sql",
        "select id from shop.orders\n",
    );
    let r = run(&ws, &["--json", "lineage", "--diff", "main"]).json();
    assert_eq!(r["base"]["worktree_dirty"], true);
    assert_eq!(
        r["models"]["added"],
        serde_json::json!([{"name": "shop.paid", "path": "transforms/shop/paid.sql"}])
    );
    // Against HEAD only the work tree's edit is a change: the new model and its two edges.
    let r = run(&ws, &["--json", "lineage", "--diff", "HEAD"]).json();
    assert_eq!(r["base"]["commit"], head);
    assert_eq!(r["columns"]["removed"], serde_json::json!([]));
    assert_eq!(r["orphaned"], serde_json::json!([]));
    let added: Vec<(&str, &str, &str)> = r["edges"]["added"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["from"].as_str().unwrap(),
                e["to"].as_str().unwrap(),
                e["kind"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        added,
        [
            ("dataset://shop.orders", "model://shop/paid", "input"),
            (
                "dataset://shop.orders#id",
                "dataset://shop.paid#id",
                "derives"
            ),
        ]
    );
}

/// Bad refs and places without history are coded diagnostics with help, never a crash.
#[test]
fn lineage_diff_refuses_what_has_no_history() {
    let (repo, ws) = repository_with_history();
    let code = |dir: &std::path::Path, reference: &str| {
        let diff = format!("--diff={reference}");
        let out = run(dir, &["--json", "lineage", &diff]);
        assert_eq!(out.code, 2, "{}", out.stdout);
        let r = out.json();
        let d = r["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["code"].as_str().unwrap().starts_with('L'))
            .unwrap_or_else(|| panic!("{r}"))
            .clone();
        assert!(d["help"].as_str().is_some_and(|h| !h.is_empty()), "{d}");
        assert_eq!(d["file"], "phlo.toml");
        d["code"].as_str().unwrap().to_string()
    };
    assert_eq!(code(&ws, "no-such-branch"), "L015");
    assert_eq!(code(&ws, "--output=/tmp/x"), "L015");
    assert_eq!(code(&ws, "before"), "L016");
    let outside = tempfile::tempdir().unwrap();
    common::copy_dir(&ws, outside.path());
    assert_eq!(code(outside.path(), "main"), "L014");
    drop(repo);
}

/// `lineage --diff <git-ref> --ref <candidate>` records the diff as the candidate's evidence,
/// bound to its hash; `promote --check` then fails the `lineage_diff` gate on the removed
/// column its reader still reads.
#[test]
fn a_lineage_diff_is_evidence_for_promote() {
    let (repo, ws) = repository_with_history();
    let created = run(&ws, &["--json", "ref", "create", "dev"]);
    assert_eq!(created.code, 0, "{}\n{}", created.stdout, created.stderr);
    let hash = created.json()["hash"].as_str().unwrap().to_string();
    let out = run(
        &ws,
        &["--json", "lineage", "--diff", "main", "--ref", "dev"],
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let evidence = out.json()["evidence"].clone();
    assert_eq!(evidence["ref"], "dev", "{evidence}");
    assert_eq!(evidence["hash"], hash.as_str(), "{evidence}");
    let orphaned = evidence["orphaned"].as_array().unwrap();
    assert_eq!(orphaned.len(), 1, "{evidence}");
    assert!(
        orphaned[0]
            .as_str()
            .unwrap()
            .contains("dataset://shop.orders#amount"),
        "{evidence}"
    );
    let recorded = run(
        &ws,
        &[
            "--json",
            "state",
            "evidence",
            "dev",
            "--kind",
            "lineage_diff",
        ],
    )
    .json();
    assert_eq!(recorded["evidence"][0]["body"], evidence, "{recorded}");
    let unknown = run(
        &ws,
        &["--json", "state", "evidence", "dev", "--kind", "lineage"],
    );
    assert_eq!(unknown.code, 2, "{}", unknown.stdout);
    assert_eq!(unknown.json()["diagnostics"][0]["code"], "C007");
    let checked = run(&ws, &["--json", "promote", "dev", "--check"]).json();
    let gate = checked["gates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == "lineage_diff")
        .unwrap_or_else(|| panic!("no lineage_diff gate: {checked}"))
        .clone();
    assert_eq!(gate["passed"], false, "{gate}");
    let detail = gate["detail"].as_str().unwrap();
    assert!(
        detail.contains(evidence["evidence_id"].as_str().unwrap()),
        "{gate}"
    );
    assert!(detail.contains("shop.report"), "{gate}");
    drop(repo);
}
