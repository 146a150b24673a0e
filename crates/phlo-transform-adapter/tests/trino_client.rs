//! The Trino and Nessie clients against the real servers `scripts/services.sh up` starts
//! (PHLO_TEST_TRINO_URL, PHLO_TEST_NESSIE_URL, PHLO_TEST_ICEBERG_LOCAL_ROOT override where).
//! A test that cannot reach them fails: it does not skip.

#[path = "../../../tests/warehouse/trino_cleanup.rs"]
mod trino_cleanup;
#[path = "../../../tests/warehouse/trino_env.rs"]
#[allow(dead_code)] // the workspace `[adapter]` section is for the root tests
mod trino_env;

use phlo_transform_adapter::trino::client::{FailureKind, Trino, TrinoConfig};
use phlo_transform_lakehouse::nessie::{Content, Nessie, NessieErrorKind};
use phlo_transform_lakehouse::read_table_state;
use serde_json::Value;
use std::time::Duration;
use trino_env::{local_root, unique};
use url::Url;

fn trino_url() -> Url {
    Url::parse(&trino_env::trino_url()).expect("PHLO_TEST_TRINO_URL")
}

fn nessie() -> Nessie {
    Nessie::new(
        Url::parse(&trino_env::nessie_url()).expect("PHLO_TEST_NESSIE_URL"),
        Duration::from_secs(10),
    )
    .unwrap()
}

fn trino() -> Trino {
    Trino::new(TrinoConfig::new(trino_url(), "phlo-test")).unwrap()
}

const UNREACHABLE: &str =
    "Trino is not answering: start it with `scripts/services.sh up` (scripts/test.sh does)";

#[tokio::test]
async fn selects_rows_with_columns_types_and_statistics() {
    let trino = trino();
    assert!(
        trino.ready().await.expect(UNREACHABLE),
        "Trino is still starting"
    );
    let result = trino
        .execute("select nationkey, name, regionkey from tpch.tiny.nation where regionkey = 1 order by nationkey")
        .await
        .unwrap();
    assert!(!result.id.is_empty());
    let columns: Vec<(&str, &str)> = result
        .columns
        .iter()
        .map(|c| (c.name.as_str(), c.type_name.as_str()))
        .collect();
    assert_eq!(
        columns,
        [
            ("nationkey", "bigint"),
            ("name", "varchar(25)"),
            ("regionkey", "bigint")
        ]
    );
    let names: Vec<&str> = result.rows.iter().map(|r| r[1].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["ARGENTINA", "BRAZIL", "CANADA", "PERU", "UNITED STATES"]
    );
    assert_eq!(result.stats.state, "FINISHED");
    assert_eq!(
        result.stats.processed_rows, 25,
        "the scan read the whole nation table"
    );
    assert!(result.update_type.is_none());
}

#[tokio::test]
async fn engine_errors_carry_name_type_and_location() {
    let trino = trino();
    let error = trino
        .execute("select nationkey,\n       no_such_column\nfrom tpch.tiny.nation")
        .await
        .unwrap_err();
    assert_eq!(error.kind, FailureKind::Query);
    let engine = error.engine.as_ref().unwrap();
    assert_eq!(engine.name, "COLUMN_NOT_FOUND");
    assert_eq!(engine.kind, "USER_ERROR");
    let location = engine.location.unwrap();
    assert_eq!((location.line, location.column), (2, 8));
    assert!(!error.retryable(), "SQL errors are never retried");
    assert!(error.query_id.is_some());

    let error = trino.execute("select 1 +").await.unwrap_err();
    assert_eq!(error.name(), "SYNTAX_ERROR");
    assert!(!error.retryable());
}

#[tokio::test]
async fn session_headers_are_carried_between_statements() {
    let trino = trino();
    trino.execute("use tpch.tiny").await.unwrap();
    assert_eq!(
        trino.current_schema(),
        (Some("tpch".into()), Some("tiny".into()))
    );
    let result = trino.execute("select count(*) from region").await.unwrap();
    assert_eq!(result.rows, [[Value::from(5)]]);

    trino
        .execute("set session query_max_run_time = '17m'")
        .await
        .unwrap();
    let shown = trino
        .execute("show session like 'query_max_run_time'")
        .await
        .unwrap();
    assert_eq!(shown.rows[0][1], Value::from("17m"), "{:?}", shown.rows);
    trino
        .execute("reset session query_max_run_time")
        .await
        .unwrap();
    let shown = trino
        .execute("show session like 'query_max_run_time'")
        .await
        .unwrap();
    assert_eq!(
        shown.rows[0][1], shown.rows[0][2],
        "back to the default: {:?}",
        shown.rows
    );
}

/// The state and error of a query in Trino's own bookkeeping.
async fn query_state(trino: &Trino, id: &str) -> (String, Option<String>) {
    let result = trino
        .execute(&format!(
            "select state, error_code from system.runtime.queries where query_id = '{id}'"
        ))
        .await
        .unwrap();
    let row = &result.rows[0];
    (
        row[0].as_str().unwrap().to_owned(),
        row[1].as_str().map(str::to_owned),
    )
}

async fn wait_for_end(trino: &Trino, id: &str) -> (String, Option<String>) {
    for _ in 0..100 {
        let state = query_state(trino, id).await;
        if state.0 == "FAILED" || state.0 == "FINISHED" {
            return state;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    query_state(trino, id).await
}

/// A query that runs for minutes on this machine.
const LONG_QUERY: &str = "select count(*) from tpch.sf1000.lineitem where comment like '%phlo%'";

#[tokio::test]
async fn a_dropped_query_is_cancelled_in_trino() {
    let trino = trino();
    let running = trino.clone();
    let task = tokio::spawn(async move { running.execute(LONG_QUERY).await });
    let mut id = None;
    for _ in 0..200 {
        if let Some(first) = trino.in_flight().into_iter().next() {
            id = Some(first);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let id = id.expect("the query never showed as in flight");
    assert_ne!(
        query_state(&trino, &id).await.0,
        "FAILED",
        "running before the abort"
    );
    // What --model-timeout and --fail-fast do: stop waiting for the attempt.
    task.abort();
    let _ = task.await;
    let (state, error) = wait_for_end(&trino, &id).await;
    assert_eq!(
        (state.as_str(), error.as_deref()),
        ("FAILED", Some("USER_CANCELED"))
    );
    assert!(trino.in_flight().is_empty());
}

#[tokio::test]
async fn cancel_by_id_ends_the_query_and_the_caller_sees_cancelled() {
    let trino = trino();
    let running = trino.clone();
    let task = tokio::spawn(async move { running.execute(LONG_QUERY).await });
    let id = loop {
        if let Some(first) = trino.in_flight().into_iter().next() {
            break first;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    trino.cancel(&id).await.unwrap();
    let error = tokio::time::timeout(Duration::from_secs(60), task)
        .await
        .expect("the cancelled query still runs")
        .unwrap()
        .unwrap_err();
    assert_eq!(error.kind, FailureKind::Cancelled, "{error}");
    assert!(!error.retryable());
    assert_eq!(wait_for_end(&trino, &id).await.0, "FAILED");
}

#[tokio::test]
async fn an_unreachable_server_is_a_retryable_failure() {
    // A port nothing listens on.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let url = Url::parse(&format!("http://127.0.0.1:{port}")).unwrap();
    let error = Trino::new(TrinoConfig::new(url, "phlo"))
        .unwrap()
        .execute("select 1")
        .await
        .unwrap_err();
    assert_eq!(error.kind, FailureKind::Unreachable, "{error}");
    assert!(error.retryable());
}

#[tokio::test]
async fn nessie_contents_name_the_metadata_trino_wrote() {
    let trino = trino();
    let nessie = nessie();
    assert_eq!(nessie.default_branch().await.unwrap(), "main");
    let schema = unique("client");
    let _cleanup = trino_cleanup::DropSchema(schema.clone());
    trino
        .execute(&format!("create schema iceberg.{schema}"))
        .await
        .unwrap();
    let created = trino
        .execute(&format!(
            "create table iceberg.{schema}.orders with (partitioning = ARRAY['orderpriority']) as \
             select orderkey, orderpriority, totalprice from tpch.tiny.orders"
        ))
        .await
        .unwrap();
    assert_eq!(created.update_type.as_deref(), Some("CREATE TABLE"));
    assert_eq!(created.update_count, Some(15000));
    trino
        .execute(&format!(
            "insert into iceberg.{schema}.orders select orderkey, orderpriority, totalprice \
             from tpch.tiny.orders where orderkey < 100"
        ))
        .await
        .unwrap();

    let Some(Content::IcebergTable {
        metadata_location,
        snapshot_id,
        schema_id,
        ..
    }) = nessie.content("main", &[&schema, "orders"]).await.unwrap()
    else {
        panic!("no Iceberg table at {schema}.orders in Nessie");
    };
    let state = read_table_state(&metadata_location, Some(&local_root())).unwrap();
    assert_eq!(state.current_snapshot_id, Some(snapshot_id));
    assert_eq!(i64::from(state.current_schema_id), schema_id);
    assert_eq!(state.snapshots.len(), 2);
    assert_eq!(state.current_snapshot().unwrap().operation, "append");
    assert_eq!(
        state
            .partition_fields
            .iter()
            .map(|f| (f.source.as_str(), f.transform.as_str()))
            .collect::<Vec<_>>(),
        [("orderpriority", "identity")]
    );
    // Trino's own view of the same table agrees.
    let snapshots = trino
        .execute(&format!(
            "select snapshot_id from iceberg.{schema}.\"orders$snapshots\" order by committed_at"
        ))
        .await
        .unwrap();
    let ids: Vec<i64> = snapshots
        .rows
        .iter()
        .map(|r| r[0].as_i64().unwrap())
        .collect();
    assert_eq!(
        ids,
        state.snapshots.iter().map(|s| s.id).collect::<Vec<_>>()
    );
    let query_id = state
        .current_snapshot()
        .unwrap()
        .summary
        .get("trino_query_id")
        .cloned();
    assert!(
        query_id.is_some(),
        "Trino records its query id in the snapshot summary"
    );

    assert_eq!(
        nessie.content("main", &[&schema, "missing"]).await.unwrap(),
        None
    );
}

#[tokio::test]
async fn nessie_branches_merge_conflict_and_rollback() {
    let trino = trino();
    let nessie = nessie();
    let schema = unique("branches");
    let _cleanup = trino_cleanup::DropSchema(schema.clone());
    trino
        .execute(&format!("create schema iceberg.{schema}"))
        .await
        .unwrap();
    trino
        .execute(&format!("create table iceberg.{schema}.t as select 1 as x"))
        .await
        .unwrap();
    let main = nessie.reference("main").await.unwrap();
    assert_eq!(main.kind, "BRANCH");
    let branch_name = unique("dev");
    let dev = nessie.create_branch(&branch_name, &main).await.unwrap();
    assert_eq!(dev.hash, main.hash);
    let again = nessie.create_branch(&branch_name, &main).await.unwrap_err();
    assert_eq!(again.kind, NessieErrorKind::AlreadyExists);
    assert!(nessie
        .references()
        .await
        .unwrap()
        .iter()
        .any(|r| r.name == branch_name));

    // A write on main after the branch: the branch does not see it, the diff does.
    trino
        .execute(&format!("insert into iceberg.{schema}.t values 2"))
        .await
        .unwrap();
    let diff = nessie.diff(&branch_name, "main").await.unwrap();
    assert!(
        diff.iter()
            .any(|d| d.key == [schema.clone(), "t".to_owned()]),
        "{diff:?}"
    );
    let main_after = nessie.reference("main").await.unwrap();
    assert_ne!(main_after.hash, main.hash);

    // Main is shared by concurrent tests: only the branch is moved. A stale expected hash
    // is a conflict, not a silent overwrite.
    let forward = nessie.reassign(&dev, &main_after.hash).await.unwrap();
    assert_eq!(forward.hash, main_after.hash);
    let stale = nessie.reassign(&dev, &main.hash).await.unwrap_err();
    assert_eq!(stale.kind, NessieErrorKind::Conflict, "{stale}");
    let snapshot_on = |content: Option<Content>| match content {
        Some(Content::IcebergTable { snapshot_id, .. }) => snapshot_id,
        other => panic!("not a table: {other:?}"),
    };
    let key = [schema.as_str(), "t"];
    assert_eq!(
        snapshot_on(nessie.content(&branch_name, &key).await.unwrap()),
        snapshot_on(
            nessie
                .content(&format!("@{}", main_after.hash), &key)
                .await
                .unwrap()
        )
    );

    // Rollback: the branch back to where it started, so it has the table before the insert.
    let rolled = nessie.reassign(&forward, &main.hash).await.unwrap();
    assert_eq!(rolled.hash, main.hash);
    let before = snapshot_on(nessie.content(&branch_name, &key).await.unwrap());
    assert_ne!(
        before,
        snapshot_on(nessie.content("main", &key).await.unwrap())
    );

    // Merging the branch into main (a dry run): nothing to apply, nothing in conflict.
    let merged = nessie
        .merge(&rolled, &nessie.reference("main").await.unwrap(), true)
        .await
        .unwrap();
    assert!(merged.conflicts.is_empty(), "{merged:?}");

    let dev = rolled;
    nessie.delete_branch(&dev).await.unwrap();
    let gone = nessie.reference(&branch_name).await.unwrap_err();
    assert_eq!(gone.kind, NessieErrorKind::NotFound);
}
