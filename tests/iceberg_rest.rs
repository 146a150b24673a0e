//! Iceberg sources found through a REST catalog (`[source."x"] catalog = …`), end to end with
//! the real binary. No real catalog can run here: `iceberg_rest/server.rs` is a
//! protocol-faithful REST catalog started inside the test, serving a real Iceberg table written
//! by PyIceberg (`tests/python/write_iceberg.py`, as in tests/lakehouse.rs) and the spec's error
//! answers. The failure tests need no Python.

mod common;
#[path = "iceberg_rest/server.rs"]
mod server;

use common::{column_types, Output};
use serde_json::{json, Value};
use server::{RestCatalog, Table};
use std::path::Path;
use std::process::Command;

const TOKEN: &str = "phlo-test-token-7f3a";
const WRONG_TOKEN: &str = "wrong-token-9c2e";

/// The binary with the tokens the tests' phlo.toml files name in `token_env`.
fn run(dir: &Path, args: &[&str]) -> Output {
    let out = Command::new(common::bin())
        .arg("-C")
        .arg(dir)
        .args(args)
        .env_remove("PHLO_STATE_URL")
        .env_remove("PHLO_TEST_UNSET_TOKEN")
        .env("PHLO_TEST_ICEBERG_TOKEN", TOKEN)
        .env("PHLO_TEST_WRONG_TOKEN", WRONG_TOKEN)
        .env("NO_COLOR", "1")
        .output()
        .expect("binary runs");
    let out = Output {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    for token in [TOKEN, WRONG_TOKEN] {
        assert!(
            !out.stdout.contains(token) && !out.stderr.contains(token),
            "a token was printed by {args:?}:\n{}\n{}",
            out.stdout,
            out.stderr
        );
    }
    out
}

/// `python3 tests/python/write_iceberg.py …`: what PyIceberg committed (see tests/lakehouse.rs).
fn write_iceberg(catalog_dir: &Path, table_dir: &Path, step: &str) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/write_iceberg.py");
    let out = Command::new("python3")
        .arg(script)
        .args([catalog_dir, table_dir])
        .args(["lims.samples", step])
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "write_iceberg.py failed (needs: python3 -m pip install \"pyiceberg[sql-sqlite,pyarrow]\" \
         pyarrow deltalake):\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn model<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == name)
        .unwrap_or_else(|| panic!("no model {name} in {report}"))
}

fn source_state(dir: &Path, name: &str) -> Value {
    let text = std::fs::read_to_string(dir.join(".phlo/transform/manifest.json")).unwrap();
    let manifest: Value = serde_json::from_str(&text).unwrap();
    assert!(!text.contains(TOKEN));
    manifest["sources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no source {name} in {manifest}"))["state"]
        .clone()
}

fn read_delta(table: &Path, model: &str) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/read_delta.py");
    let out = Command::new("python3")
        .arg(script)
        .arg(table)
        .arg(format!("phlo-transform:{model}"))
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A table served by the catalog under a path (`/api/catalog`), a config `prefix`, a nested
/// namespace and a bearer token: `check` and `inspect` type its readers from the catalog's
/// metadata, `run` reads its data on the local engine from the metadata-location the catalog
/// gives, a new snapshot is a source change, and a metadata-location the local engine cannot
/// read is a coded error at run time.
#[test]
fn a_rest_catalog_table_is_typed_and_read_on_the_local_engine() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().join("ws");
    let (pyiceberg, lake) = (
        tmp.path().join("pyiceberg"),
        tmp.path().join("lake/samples"),
    );
    let first = write_iceberg(&pyiceberg, &lake, "1");
    let catalog = RestCatalog::start("/api/catalog", Some("wh-7"), Some(TOKEN));
    catalog.put_metadata(
        "lims.raw.samples",
        first["metadata_location"].as_str().unwrap(),
    );
    common::write_file(
        &ws,
        "phlo.toml",
        &format!(
            "[source.\"raw.samples\"]\ncatalog = \"{}\"\ntable = \"lims.raw.samples\"\n\
             warehouse = \"lab\"\ntoken_env = \"PHLO_TEST_ICEBERG_TOKEN\"\n",
            catalog.url
        ),
    );
    common::write_file(
        &ws,
        "transforms/shop/samples.sql",
        "-- @table\nselect * from raw.samples\n",
    );
    common::write_file(
        &ws,
        "transforms/shop/passed_by_site.sql",
        "-- @table\nselect site, count(*) as n from raw.samples where passed group by site\n",
    );

    let check = run(&ws, &["check", "--json"]);
    assert_eq!(check.code, 0, "{}\n{}", check.stdout, check.stderr);
    let inspect = run(&ws, &["inspect", "shop.samples", "--json"]).json();
    assert_eq!(
        column_types(&inspect["schema"]),
        ["sample_id:Int64", "site:Utf8", "passed:Boolean"]
    );
    let snapshot = first["snapshot_id"].as_i64().unwrap();
    assert_eq!(
        source_state(&ws, "raw.samples"),
        format!("iceberg:snapshot:{snapshot},schema:0")
    );
    let requests = catalog.requests();
    assert!(requests
        .iter()
        .all(|r| r.authorization.as_deref() == Some(&format!("Bearer {TOKEN}"))));
    let targets: Vec<&str> = requests.iter().map(|r| r.target.as_str()).collect();
    assert!(
        targets.contains(&"/api/catalog/v1/config?warehouse=lab"),
        "{targets:?}"
    );
    assert!(
        targets.contains(&"/api/catalog/v1/wh-7/namespaces/lims%1Fraw/tables/samples"),
        "{targets:?}"
    );

    let out = run(&ws, &["run", "--json"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let report = out.json();
    assert_eq!(model(&report, "shop.samples")["rows"], 4, "{report}");
    let by_site = read_delta(
        &ws.join(".phlo/warehouse/shop.passed_by_site"),
        "shop.passed_by_site",
    );
    assert_eq!(by_site["columns"], json!(["site", "n"]));
    let mut data = by_site["data"].as_array().unwrap().clone();
    data.sort_by_key(|r| r.to_string());
    assert_eq!(
        data,
        [
            json!(["cambridge", 1]),
            json!(["leeds", 1]),
            json!(["oxford", 1])
        ]
    );

    // A new snapshot, seen through the catalog only.
    let second = write_iceberg(&pyiceberg, &lake, "2");
    catalog.put_metadata(
        "lims.raw.samples",
        second["metadata_location"].as_str().unwrap(),
    );
    let plan = run(&ws, &["plan", "--json"]).json();
    assert_eq!(
        model(&plan, "shop.samples")["reasons"][0]["kind"],
        "source_change",
        "{plan}"
    );
    let report = run(&ws, &["run", "--json"]).json();
    assert_eq!(model(&report, "shop.samples")["rows"], 6, "{report}");
    assert_eq!(
        source_state(&ws, "raw.samples"),
        format!("iceberg:snapshot:{},schema:0", second["snapshot_id"])
    );

    // The same metadata announced at an object-store location: typed, but not readable here.
    let file = second["metadata_location"].as_str().unwrap();
    catalog.put(
        "lims.raw.remote",
        Table::Metadata {
            file: file.strip_prefix("file://").unwrap_or(file).into(),
            location: "s3://lake/lims/samples/metadata/00001.metadata.json".into(),
        },
    );
    let toml = std::fs::read_to_string(ws.join("phlo.toml")).unwrap();
    common::write_file(
        &ws,
        "phlo.toml",
        &format!(
            "{toml}\n[source.\"raw.remote\"]\ncatalog = \"{}\"\ntable = \"lims.raw.remote\"\n\
             token_env = \"PHLO_TEST_ICEBERG_TOKEN\"\n",
            catalog.url
        ),
    );
    common::write_file(
        &ws,
        "transforms/shop/remote.sql",
        "-- @table\nselect * from raw.remote\n",
    );
    assert_eq!(run(&ws, &["check"]).code, 0);
    let out = run(&ws, &["run"]);
    assert_ne!(out.code, 0, "{}", out.stdout);
    assert!(
        out.stderr.contains("warning[A003]: source `raw.remote`: its Iceberg REST catalog puts \
                             the table's metadata at `s3://lake/lims/samples/metadata/00001.metadata.json`"),
        "{}",
        out.stderr
    );
}

/// Every way the catalog can fail — no such table, a wrong token, a token variable that is not
/// set, a closed port, an answer that is not JSON — is an A004 error at the source's section of
/// phlo.toml with a help line, never a crash; readers are typed `unknown` with the reason, or
/// against the declared `columns` when there are some.
#[test]
fn catalog_failures_are_coded_diagnostics_and_readers_are_unknown() {
    let catalog = RestCatalog::start("", None, Some(TOKEN));
    catalog.put("lab.garbled", Table::Garbled);
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let offline = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path();
    let section = |name: &str, url: &str, table: &str, token: &str| {
        format!(
            "[source.\"raw.{name}\"]\ncatalog = \"{url}\"\ntable = \"{table}\"\ntoken_env = \"{token}\"\n"
        )
    };
    let url = catalog.url.as_str();
    let good = "PHLO_TEST_ICEBERG_TOKEN";
    let toml = [
        section("missing", url, "lab.missing", good),
        section("denied", url, "lab.missing", "PHLO_TEST_WRONG_TOKEN"),
        section("unset", url, "lab.missing", "PHLO_TEST_UNSET_TOKEN"),
        section("offline", &offline, "lab.offline", good),
        section("garbled", url, "lab.garbled", good),
        section("fallback", url, "lab.fallback", good)
            + "columns = { sample_id = \"bigint\", site = \"varchar\" }\n",
    ]
    .join("\n");
    common::write_file(ws, "phlo.toml", &toml);
    let names = [
        "missing", "denied", "unset", "offline", "garbled", "fallback",
    ];
    for name in names {
        common::write_file(
            ws,
            &format!("transforms/shop/{name}.sql"),
            &format!("-- @table\nselect * from raw.{name}\n"),
        );
    }

    let human = run(ws, &["check"]);
    assert_eq!(human.code, 2, "{}", human.stderr);
    assert!(!human.stderr.contains("panicked"), "{}", human.stderr);
    let redacted = |text: &str| {
        text.replace(url, "http://CATALOG")
            .replace(&offline, "http://OFFLINE")
    };
    insta::assert_snapshot!("catalog_failures_human", redacted(&human.stderr));

    let out = run(ws, &["check", "--json"]);
    assert_eq!(out.code, 2);
    let report = out.json();
    let diags = report["diagnostics"].as_array().unwrap();
    let a004: Vec<&Value> = diags.iter().filter(|d| d["code"] == "A004").collect();
    assert_eq!(a004.len(), names.len(), "{diags:?}");
    for d in &a004 {
        assert_eq!(d["severity"], "error");
        assert_eq!(d["file"], "phlo.toml");
        for field in ["line", "column", "help"] {
            assert!(!d[field].is_null(), "{field} missing in {d}");
        }
    }
    insta::assert_json_snapshot!(
        "catalog_failures_json",
        serde_json::from_str::<Value>(&redacted(&serde_json::to_string(&a004).unwrap())).unwrap()
    );

    for name in &names[..5] {
        let inspect = run(ws, &["inspect", &format!("shop.{name}"), "--json"]).json();
        let reason = inspect["schema"]["reason"]
            .as_str()
            .unwrap_or_else(|| panic!("{inspect}"));
        assert!(
            reason.starts_with(&format!(
                "source raw.{name}: the Iceberg REST catalog cannot load table"
            )),
            "{reason}"
        );
    }
    let fallback = run(ws, &["inspect", "shop.fallback", "--json"]).json();
    assert_eq!(
        column_types(&fallback["schema"]),
        ["sample_id:Int64", "site:Utf8"]
    );

    let out = run(ws, &["run"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(!ws.join(".phlo/warehouse").exists());
}
