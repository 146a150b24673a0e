//! The state-store suite, run once per backend: every test below exists as `sqlite::<name>`
//! (a fresh file in a temporary folder) and `postgres::<name>` (a fresh database on the
//! PostgreSQL server, see `testing`; an unreachable server fails the test).

use crate::testing::PgTestDb;
use crate::{
    open, AttemptRecord, MaterializedVersion, NodeRecord, QueryRecord, RecordedColumn, RunRecord,
    StateLocation, StateStore,
};
use std::collections::BTreeMap;
use std::sync::Arc;

/// A state location and what keeps it alive (the temporary folder, the test database).
struct Backend {
    location: StateLocation,
    _guard: Box<dyn std::any::Any + Send>,
}

async fn sqlite_backend() -> Backend {
    let dir = tempfile::tempdir().unwrap();
    Backend {
        location: StateLocation::Sqlite(dir.path().join("state.db")),
        _guard: Box::new(dir),
    }
}

async fn postgres_backend() -> Backend {
    let db = PgTestDb::create().await;
    Backend {
        location: StateLocation::Postgres(db.url().to_string()),
        _guard: Box::new(db),
    }
}

macro_rules! suite {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let backend = super::sqlite_backend().await;
                    super::$name(backend.location.clone()).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let backend = super::postgres_backend().await;
                    super::$name(backend.location.clone()).await;
                }
            )*
        }
    };
}

suite!(
    older_generations_never_overwrite_newer_records,
    two_interleaved_runs_keep_the_newer_materialisation,
    concurrent_writers_keep_the_highest_generation,
    runs_and_nodes_round_trip_and_reopen,
    plans_are_stored_once_and_loaded,
    run_summaries_count_nodes_by_kind_and_status,
    runs_are_found_by_unique_prefix,
    model_history_and_materialisations,
    attempts_reopened_runs_and_continuations_round_trip,
    evidence_is_written_once_and_deleted_with_its_reference,
    current_as_of_round_trips_and_unknown_stays_unknown,
);

async fn current_as_of_round_trips_and_unknown_stays_unknown(location: StateLocation) {
    let store = store(&location).await;
    let at = chrono::DateTime::parse_from_rfc3339("2026-12-07T12:30:00.123456Z")
        .unwrap()
        .with_timezone(&chrono::Utc);
    let mut known = mv("assay.raw", "v1", 1);
    known.current_as_of = Some(at);
    store.record_materialization(&known).await.unwrap();
    store
        .record_materialization(&mv("assay.results", "v1", 1))
        .await
        .unwrap();
    let recorded = store.materializations("local").await.unwrap();
    assert_eq!(recorded["assay.raw"].current_as_of, Some(at));
    assert_eq!(recorded["assay.results"].current_as_of, None);
    let json = serde_json::to_value(&recorded["assay.raw"]).unwrap();
    assert_eq!(json["current_as_of"], "2026-12-07T12:30:00.123456Z");
    let json = serde_json::to_value(&recorded["assay.results"]).unwrap();
    assert_eq!(json["current_as_of"], serde_json::Value::Null);
    // A newer record replaces the instant, also with unknown.
    store
        .record_materialization(&mv("assay.raw", "v2", 2))
        .await
        .unwrap();
    let recorded = store.materializations("local").await.unwrap();
    assert_eq!(recorded["assay.raw"].current_as_of, None);
}

async fn store(location: &StateLocation) -> Arc<dyn StateStore> {
    open(location)
        .await
        .unwrap_or_else(|e| panic!("{}", e.message))
}

fn mv(model: &str, version: &str, generation: i64) -> MaterializedVersion {
    MaterializedVersion {
        environment: "local".into(),
        model_id: model.into(),
        model_name: model.into(),
        version: version.into(),
        sql_hash: "s".into(),
        config_hash: "c".into(),
        upstream: BTreeMap::from([("assay.raw".to_string(), "v0".to_string())]),
        sources: BTreeMap::new(),
        materialization: "table".into(),
        relation: model.into(),
        run_id: format!("run-{generation}"),
        generation,
        materialized_at: "2026-01-01T00:00:00Z".into(),
        text_hash: Some("t".into()),
        plan_hash: None,
        output_columns: Some(vec![RecordedColumn {
            name: "id".into(),
            data_type: "Int64".into(),
            nullable: false,
        }]),
        adapter: Some("local".into()),
        output_identity: Some(format!("iceberg:snapshot:{generation},schema:0")),
        physical_state: Some(serde_json::json!({"format": "iceberg", "snapshot_id": generation})),
        current_as_of: None,
    }
}

fn run(id: &str, generation: i64, started_at: &str) -> RunRecord {
    RunRecord {
        run_id: id.into(),
        plan_id: "p1".into(),
        environment: "local".into(),
        command: "run".into(),
        status: "running".into(),
        generation,
        started_at: started_at.into(),
        finished_at: None,
        continued_from: None,
    }
}

fn node(name: &str, kind: &str, status: &str) -> NodeRecord {
    NodeRecord {
        node: name.into(),
        kind: kind.into(),
        status: status.into(),
        attempt: 1,
        version: Some(format!("{name}-v")),
        started_at: Some("2026-01-01T00:00:00Z".into()),
        finished_at: Some("2026-01-01T00:00:01Z".into()),
        duration_ms: Some(1000),
        rows: Some(4),
        error_code: (status == "failed").then(|| "A001".to_string()),
        error_message: (status == "failed").then(|| "boom".to_string()),
    }
}

async fn version_of(store: &dyn StateStore, model: &str) -> (String, String) {
    let m = &store.materializations("local").await.unwrap()[model];
    (m.version.clone(), m.run_id.clone())
}

async fn older_generations_never_overwrite_newer_records(location: StateLocation) {
    let store = store(&location).await;
    store
        .record_materialization(&mv("assay.raw", "v2", 20))
        .await
        .unwrap();
    store
        .record_materialization(&mv("assay.raw", "v1", 10))
        .await
        .unwrap();
    let got = store.materializations("local").await.unwrap();
    assert_eq!(got["assay.raw"].version, "v2");
    assert_eq!(got["assay.raw"].upstream["assay.raw"], "v0");
    assert_eq!(got["assay.raw"].text_hash.as_deref(), Some("t"));
    store
        .record_materialization(&mv("assay.raw", "v3", 30))
        .await
        .unwrap();
    assert_eq!(version_of(store.as_ref(), "assay.raw").await.0, "v3");
}

/// SPEC §39: run A (older generation) starts, run B (newer) starts, B finishes a model first,
/// then A finishes the same model: B's record stays. A model only A builds is A's.
async fn two_interleaved_runs_keep_the_newer_materialisation(location: StateLocation) {
    let a = store(&location).await;
    let b = store(&location).await; // a second client, as a second process would be
    a.begin_run(&run("run-10", 10, "2026-01-01T00:00:00Z"))
        .await
        .unwrap();
    b.begin_run(&run("run-20", 20, "2026-01-01T00:00:01Z"))
        .await
        .unwrap();
    a.record_materialization(&mv("assay.raw", "a-raw", 10))
        .await
        .unwrap();
    b.record_materialization(&mv("assay.raw", "b-raw", 20))
        .await
        .unwrap();
    b.record_materialization(&mv("assay.results", "b-results", 20))
        .await
        .unwrap();
    a.record_materialization(&mv("assay.results", "a-results", 10))
        .await
        .unwrap();
    a.record_materialization(&mv("reporting.monthly", "a-monthly", 10))
        .await
        .unwrap();
    a.finish_run("run-10", "passed", "2026-01-01T00:00:05Z")
        .await
        .unwrap();
    b.finish_run("run-20", "passed", "2026-01-01T00:00:03Z")
        .await
        .unwrap();
    for s in [&a, &b] {
        assert_eq!(
            version_of(s.as_ref(), "assay.raw").await,
            ("b-raw".into(), "run-20".into())
        );
        assert_eq!(
            version_of(s.as_ref(), "assay.results").await,
            ("b-results".into(), "run-20".into())
        );
        assert_eq!(
            version_of(s.as_ref(), "reporting.monthly").await,
            ("a-monthly".into(), "run-10".into())
        );
    }
    // The same generation may record again (a retried write of the same run).
    a.record_materialization(&mv("reporting.monthly", "a-monthly-2", 10))
        .await
        .unwrap();
    assert_eq!(
        version_of(a.as_ref(), "reporting.monthly").await.0,
        "a-monthly-2"
    );
}

/// Many writers at once, in no particular order: the highest generation wins, always.
async fn concurrent_writers_keep_the_highest_generation(location: StateLocation) {
    let store = store(&location).await;
    let generations: Vec<i64> = (1..=24).map(|i| (i * 7919) % 97).collect();
    let max = *generations.iter().max().unwrap();
    let mut tasks = Vec::new();
    for g in generations {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            store
                .record_materialization(&mv("assay.raw", &format!("v{g}"), g))
                .await
                .unwrap();
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let (version, run_id) = version_of(store.as_ref(), "assay.raw").await;
    assert_eq!((version, run_id), (format!("v{max}"), format!("run-{max}")));
}

async fn runs_and_nodes_round_trip_and_reopen(location: StateLocation) {
    {
        let store = store(&location).await;
        store
            .begin_run(&run("r1", 1, "2026-01-01T00:00:00Z"))
            .await
            .unwrap();
        let mut n = node("assay.raw", "model", "running");
        n.rows = None;
        store
            .record_nodes("r1", std::slice::from_ref(&n))
            .await
            .unwrap();
        n.status = "passed".into();
        n.rows = Some(4);
        store
            .record_nodes("r1", std::slice::from_ref(&n))
            .await
            .unwrap();
        store
            .finish_run("r1", "passed", "2026-01-01T00:00:01Z")
            .await
            .unwrap();
    }
    // Reopening applies no migration twice and finds everything.
    let store = store(&location).await;
    let runs = store.runs(10).await.unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].status, "passed");
    assert_eq!(runs[0].finished_at.as_deref(), Some("2026-01-01T00:00:01Z"));
    let nodes = store.run_nodes("r1").await.unwrap();
    assert_eq!(nodes.len(), 1);
    assert_eq!(
        (nodes[0].status.as_str(), nodes[0].rows),
        ("passed", Some(4))
    );
    assert_eq!(nodes[0], node("assay.raw", "model", "passed"));
}

async fn plans_are_stored_once_and_loaded(location: StateLocation) {
    let store = store(&location).await;
    let body = serde_json::json!({ "plan_id": "p1", "created_at": "2026-01-01T00:00:00Z", "models": [1, 2] });
    store.store_plan("p1", &body).await.unwrap();
    // Idempotent: the same id again is not an error and keeps the first body.
    store
        .store_plan("p1", &serde_json::json!({ "plan_id": "p1", "other": true }))
        .await
        .unwrap();
    assert_eq!(store.load_plan("p1").await.unwrap(), Some(body));
    assert_eq!(store.load_plan("p2").await.unwrap(), None);
}

async fn run_summaries_count_nodes_by_kind_and_status(location: StateLocation) {
    let store = store(&location).await;
    store
        .begin_run(&run("r1", 1, "2026-01-01T00:00:00Z"))
        .await
        .unwrap();
    store
        .begin_run(&run("r2", 2, "2026-01-02T00:00:00Z"))
        .await
        .unwrap();
    store
        .begin_run(&run("r3", 3, "2026-01-03T00:00:00Z"))
        .await
        .unwrap();
    // One batch; a node given twice ends with its later record (`c`: running, then failed).
    let batch = [
        node("a", "model", "passed"),
        node("c", "model", "running"),
        node("b", "model", "passed"),
        node("c", "model", "failed"),
    ];
    store.record_nodes("r2", &batch).await.unwrap();
    store
        .record_nodes("r2", &[node("not_null_a_id", "test", "passed")])
        .await
        .unwrap();
    store
        .record_nodes("r1", &[node("a", "model", "skipped")])
        .await
        .unwrap();
    let all = store.run_summaries(10).await.unwrap();
    let ids: Vec<&str> = all.iter().map(|s| s.run.run_id.as_str()).collect();
    assert_eq!(ids, ["r3", "r2", "r1"]);
    assert!(all[0].models.is_empty() && all[0].tests.is_empty());
    assert_eq!(
        all[1].models,
        BTreeMap::from([("failed".to_string(), 1), ("passed".to_string(), 2)])
    );
    assert_eq!(all[1].tests, BTreeMap::from([("passed".to_string(), 1)]));
    assert_eq!(all[2].models, BTreeMap::from([("skipped".to_string(), 1)]));
    let two = store.run_summaries(2).await.unwrap();
    assert_eq!(two.len(), 2);
    assert_eq!(two[1].models.values().sum::<i64>(), 3);
}

async fn runs_are_found_by_unique_prefix(location: StateLocation) {
    let store = store(&location).await;
    for (id, g) in [("019abc01", 1), ("019abc02", 2), ("019def00", 3)] {
        store
            .begin_run(&run(id, g, &format!("2026-01-0{g}T00:00:00Z")))
            .await
            .unwrap();
    }
    let ids = |v: Vec<RunRecord>| v.into_iter().map(|r| r.run_id).collect::<Vec<_>>();
    assert_eq!(
        ids(store.runs_with_prefix("019abc", 10).await.unwrap()),
        ["019abc02", "019abc01"]
    );
    assert_eq!(
        ids(store.runs_with_prefix("019d", 10).await.unwrap()),
        ["019def00"]
    );
    assert_eq!(
        ids(store.runs_with_prefix("019abc01", 10).await.unwrap()),
        ["019abc01"]
    );
    assert!(store.runs_with_prefix("x", 10).await.unwrap().is_empty());
    // LIKE wildcards are not wildcards here.
    assert!(store.runs_with_prefix("019%", 10).await.unwrap().is_empty());
    assert_eq!(store.runs_with_prefix("0", 1).await.unwrap().len(), 1);
}

async fn model_history_and_materialisations(location: StateLocation) {
    let store = store(&location).await;
    store
        .begin_run(&run("r1", 1, "2026-01-01T00:00:00Z"))
        .await
        .unwrap();
    store
        .begin_run(&run("r2", 2, "2026-01-02T00:00:00Z"))
        .await
        .unwrap();
    store
        .record_nodes("r1", &[node("assay.raw", "model", "passed")])
        .await
        .unwrap();
    store
        .record_nodes("r2", &[node("assay.raw", "model", "failed")])
        .await
        .unwrap();
    store
        .record_nodes("r2", &[node("assay.results", "model", "blocked")])
        .await
        .unwrap();
    store
        .record_nodes("r2", &[node("assay.raw", "test", "passed")])
        .await
        .unwrap();
    store
        .finish_run("r2", "failed", "2026-01-02T00:00:09Z")
        .await
        .unwrap();
    let mut pinned = mv("assay.raw", "v1", 1);
    pinned.model_id = "raw-id".into();
    store.record_materialization(&pinned).await.unwrap();
    let mut dev = pinned.clone();
    dev.environment = "dev".into();
    store.record_materialization(&dev).await.unwrap();

    let history = store.model_history("assay.raw", 10).await.unwrap();
    let rows: Vec<(&str, &str, &str)> = history
        .iter()
        .map(|h| {
            (
                h.run_id.as_str(),
                h.node.status.as_str(),
                h.run_status.as_str(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [("r2", "failed", "failed"), ("r1", "passed", "running")]
    );
    assert_eq!(history[0].node.error_code.as_deref(), Some("A001"));
    assert_eq!(history[0].generation, 2);
    assert_eq!(history[1].run_started_at, "2026-01-01T00:00:00Z");
    assert_eq!(store.model_history("assay.raw", 1).await.unwrap().len(), 1);

    let by_name = store.model_materializations("assay.raw").await.unwrap();
    let envs: Vec<&str> = by_name.iter().map(|m| m.environment.as_str()).collect();
    assert_eq!(envs, ["dev", "local"]);
    assert_eq!(
        store.model_materializations("raw-id").await.unwrap(),
        by_name
    );
    assert!(store
        .model_materializations("nope")
        .await
        .unwrap()
        .is_empty());
    assert_eq!(
        store.model_names().await.unwrap(),
        ["assay.raw", "assay.results"]
    );
}

#[test]
fn locations_select_the_backend() {
    use std::path::PathBuf;
    assert_eq!(
        StateLocation::parse("postgres://u@h/db").unwrap(),
        StateLocation::Postgres("postgres://u@h/db".into())
    );
    assert_eq!(
        StateLocation::parse("postgresql://h/db").unwrap(),
        StateLocation::Postgres("postgresql://h/db".into())
    );
    assert_eq!(
        StateLocation::parse("state.db").unwrap(),
        StateLocation::Sqlite(PathBuf::from("state.db"))
    );
    assert_eq!(
        StateLocation::parse("sqlite:///tmp/s.db").unwrap(),
        StateLocation::Sqlite(PathBuf::from("/tmp/s.db"))
    );
}

#[test]
fn a_mistyped_scheme_is_an_error_not_a_file_named_after_the_password() {
    let err = StateLocation::parse("postgress://phlo:s3cret-pw@db/state").unwrap_err();
    assert!(err.contains("postgress://"), "{err}");
    assert!(!err.contains("s3cret-pw"), "{err}");
    assert!(StateLocation::parse("mysql://db/x").is_err());
    // A Windows-looking or relative path is still a path.
    assert!(matches!(
        StateLocation::parse("dir/state.db"),
        Ok(StateLocation::Sqlite(_))
    ));
}

#[test]
fn urls_are_shown_without_passwords() {
    use crate::redact_url;
    assert_eq!(
        redact_url("postgres://phlo:s3cret@db.example:5432/state"),
        "postgres://phlo:***@db.example:5432/state"
    );
    assert_eq!(
        redact_url("postgresql://db/state?user=phlo&password=s3cret&sslmode=require"),
        "postgresql://db/state?user=phlo&password=***&sslmode=require"
    );
    assert_eq!(
        redact_url("postgres://postgres@127.0.0.1/postgres"),
        "postgres://postgres@127.0.0.1/postgres"
    );
    assert!(!redact_url("postgres://u:p%40ss@[::1/x").contains("p%40ss"));
}

/// Nothing listens on port 1: the error comes at once, names the server, hides the password.
#[tokio::test]
async fn an_unreachable_server_is_a_prompt_error_without_the_password() {
    let t0 = std::time::Instant::now();
    let err = match open(&StateLocation::Postgres(
        "postgres://phlo:s3cret@127.0.0.1:1/state".into(),
    ))
    .await
    {
        Ok(_) => panic!("nothing listens on port 1"),
        Err(e) => e,
    };
    assert!(
        err.message.contains(
            "cannot connect to the PostgreSQL state database postgres://phlo:***@127.0.0.1:1/state"
        ),
        "{}",
        err.message
    );
    assert!(!err.message.contains("s3cret"), "{}", err.message);
    assert!(t0.elapsed() < std::time::Duration::from_secs(5));
}

async fn attempts_reopened_runs_and_continuations_round_trip(location: StateLocation) {
    let store = store(&location).await;
    store
        .begin_run(&run("r1", 1, "2026-01-01T00:00:00Z"))
        .await
        .unwrap();
    let attempt = |n: i64, status: &str, retryable: bool| AttemptRecord {
        node: "x.a".into(),
        kind: "model".into(),
        attempt: n,
        status: status.into(),
        started_at: Some("2026-01-01T00:00:00Z".into()),
        finished_at: Some("2026-01-01T00:00:01Z".into()),
        duration_ms: Some(1000),
        error_category: (status == "failed").then(|| "adapter".into()),
        error_code: (status == "failed").then(|| "A002".into()),
        error_message: (status == "failed").then(|| "connection reset".into()),
        retryable,
        // Trino reports its queries; the record keeps them in order.
        queries: if status == "passed" {
            vec![QueryRecord {
                query_id: format!("q{n}"),
                rows: 10,
                bytes: 100,
                cpu_ms: 5,
                wall_ms: 7,
                written_rows: Some(3),
            }]
        } else {
            Vec::new()
        },
    };
    store
        .record_attempt("r1", &attempt(2, "passed", false))
        .await
        .unwrap();
    store
        .record_attempt("r1", &attempt(1, "failed", true))
        .await
        .unwrap();
    // An upsert: the same attempt written again replaces its record.
    store
        .record_attempt("r1", &attempt(1, "failed", true))
        .await
        .unwrap();
    let attempts = store.run_attempts("r1").await.unwrap();
    assert_eq!(
        attempts,
        vec![attempt(1, "failed", true), attempt(2, "passed", false)]
    );

    store
        .finish_run("r1", "cancelled", "2026-01-01T00:00:02Z")
        .await
        .unwrap();
    store.reopen_run("r1", "p2").await.unwrap();
    let reopened = &store.runs_with_prefix("r1", 2).await.unwrap()[0];
    assert_eq!(
        (
            reopened.status.as_str(),
            reopened.finished_at.as_deref(),
            reopened.plan_id.as_str()
        ),
        ("running", None, "p2")
    );

    let mut next = run("r2", 2, "2026-01-01T00:01:00Z");
    next.continued_from = Some("r1".into());
    store.begin_run(&next).await.unwrap();
    let found = &store.runs_with_prefix("r2", 2).await.unwrap()[0];
    assert_eq!(found.continued_from.as_deref(), Some("r1"));
}

async fn evidence_is_written_once_and_deleted_with_its_reference(location: StateLocation) {
    use crate::{EvidenceRecord, RefRecord, RefSwap, RefWrite};
    let store = store(&location).await;
    let evidence = |id: &str, at: &str, body: serde_json::Value| EvidenceRecord {
        evidence_id: id.into(),
        kind: "environment".into(),
        reference: "dev".into(),
        hash: "h1".into(),
        at: at.into(),
        body,
    };
    store
        .record_evidence(&evidence(
            "e1",
            "2026-01-01T00:00:00Z",
            serde_json::json!({"n": 1}),
        ))
        .await
        .unwrap();
    // Immutable: the same id again keeps the first record.
    store
        .record_evidence(&evidence(
            "e1",
            "2026-01-03T00:00:00Z",
            serde_json::json!({"n": 9}),
        ))
        .await
        .unwrap();
    store
        .record_evidence(&evidence(
            "e2",
            "2026-01-02T00:00:00Z",
            serde_json::json!({"n": 2}),
        ))
        .await
        .unwrap();
    let found = store.evidence("environment", "dev").await.unwrap();
    assert_eq!(
        found
            .iter()
            .map(|e| e.evidence_id.as_str())
            .collect::<Vec<_>>(),
        ["e2", "e1"]
    );
    assert_eq!(found[1].body["n"], 1);
    assert!(store
        .evidence("branch_diff", "dev")
        .await
        .unwrap()
        .is_empty());
    // Deleting the reference deletes its evidence in the same transaction.
    let record = RefRecord {
        name: "dev".into(),
        hash: "h1".into(),
        environment: "dev".into(),
        pointers: BTreeMap::new(),
        created_from: None,
        created_at: "2026-01-01T00:00:00Z".into(),
        updated_at: "2026-01-01T00:00:00Z".into(),
        run: None,
    };
    let write = |expected: Option<&str>, record: Option<RefRecord>| RefSwap {
        writes: vec![RefWrite {
            name: "dev".into(),
            expected: expected.map(str::to_string),
            record,
        }],
        ..RefSwap::default()
    };
    assert!(store.swap_refs(&write(None, Some(record))).await.unwrap());
    assert!(store.swap_refs(&write(Some("h1"), None)).await.unwrap());
    assert!(store
        .evidence("environment", "dev")
        .await
        .unwrap()
        .is_empty());
}
