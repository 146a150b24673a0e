//! The Trino adapter through the `Adapter` trait, against the real Trino and Nessie that
//! `scripts/services.sh up` starts (catalogs `iceberg` on Nessie, `views`, `tpch`, `memory`).
//! A test that cannot reach them fails.

#[path = "../../../tests/warehouse/trino_cleanup.rs"]
mod trino_cleanup;
#[path = "../../../tests/warehouse/trino_env.rs"]
#[allow(dead_code)] // the workspace `[adapter]` section is for the root tests
mod trino_env;

use datafusion::sql::sqlparser::ast::{Query, Statement};
use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::parser::Parser;
use phlo_transform_adapter::trino::client::{Trino, TrinoConfig};
use phlo_transform_adapter::trino::{TrinoEngine, TrinoSettings};
use phlo_transform_adapter::{
    Adapter, InFlight, MaterializeJob, Relation, RelationKind, TableSpec,
};
use phlo_transform_lakehouse::nessie::{Content, Nessie};
use phlo_transform_project::{IncrementalStrategy, Materialization};
use serde_json::Value;
use std::collections::HashSet;
use std::time::Duration;
use trino_env::unique;
use url::Url;

fn settings() -> TrinoSettings {
    TrinoSettings {
        url: Url::parse(&trino_env::trino_url()).expect("PHLO_TEST_TRINO_URL"),
        user: "phlo-test".into(),
        password: None,
        catalog: "iceberg".into(),
        views_catalog: Some("views".into()),
        default_schema: None,
        nessie: Some((
            Url::parse(&trino_env::nessie_url()).expect("PHLO_TEST_NESSIE_URL"),
            "main".into(),
        )),
        local_root: Some(trino_env::local_root()),
    }
}

async fn engine(views: &[&str]) -> TrinoEngine {
    TrinoEngine::connect(settings(), views.iter().map(|v| v.to_string()).collect())
        .await
        .expect("Trino is not answering: start it with `scripts/services.sh up`")
}

fn client() -> Trino {
    Trino::new(TrinoConfig::new(settings().url, "phlo-test")).unwrap()
}

fn parse(sql: &str) -> Query {
    match Parser::parse_sql(&GenericDialect {}, sql)
        .unwrap()
        .remove(0)
    {
        Statement::Query(q) => *q,
        other => panic!("not a query: {other}"),
    }
}

fn job(
    engine: &TrinoEngine,
    model: &str,
    materialization: Materialization,
    sql: &str,
    table: TableSpec,
) -> MaterializeJob {
    MaterializeJob {
        model_id: model.into(),
        model_name: model.into(),
        relation: engine.model_relation(model),
        materialization,
        version: "v1".into(),
        run_id: "run".into(),
        generation: 1,
        query: parse(sql),
        table,
        columns: Vec::new(),
        path: format!("transforms/{}.sql", model.replace('.', "/")),
        text: sql.into(),
    }
}

/// All rows of `relation`, sorted, as JSON text (a stable comparison of whole tables).
async fn rows(relation: &Relation) -> Vec<String> {
    let result = client()
        .execute(&format!("SELECT * FROM {}", relation.quoted()))
        .await
        .unwrap();
    let mut rows: Vec<String> = result
        .rows
        .iter()
        .map(|r| Value::from(r.clone()).to_string())
        .collect();
    rows.sort();
    rows
}

#[tokio::test]
async fn tables_views_and_their_iceberg_identity() {
    let schema = unique("models");
    let _cleanup = trino_cleanup::DropSchema(schema.clone());
    let view_model = format!("{schema}.nation_names");
    let engine = engine(&[&view_model]).await;
    let inflight = InFlight::default();

    let table = job(
        &engine,
        &format!("{schema}.nations"),
        Materialization::Table,
        "select nationkey, name, regionkey\nfrom tpch.tiny.nation",
        TableSpec::default(),
    );
    assert_eq!(
        table.relation.parts,
        ["iceberg", schema.as_str(), "nations"]
    );
    let outcome = engine.materialize(&table, &inflight).await.unwrap();
    assert_eq!(outcome.rows, Some(25));
    assert_eq!(outcome.write.as_deref(), Some("full"));

    // The identity is Nessie's current snapshot of the table, read from the metadata file.
    let nessie = Nessie::new(settings().nessie.unwrap().0, Duration::from_secs(10)).unwrap();
    let Some(Content::IcebergTable {
        snapshot_id,
        schema_id,
        ..
    }) = nessie.content("main", &[&schema, "nations"]).await.unwrap()
    else {
        panic!("Nessie has no table {schema}.nations");
    };
    assert_eq!(
        outcome.output_identity.as_deref(),
        Some(format!("iceberg:snapshot:{snapshot_id},schema:{schema_id}").as_str())
    );
    let info = engine
        .introspect_relation(&table.relation)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(info.kind, RelationKind::Table);
    assert_eq!(info.strategy.as_deref(), Some(table.table.label().as_str()));
    let columns: Vec<(String, String)> = info
        .columns
        .unwrap()
        .into_iter()
        .map(|c| (c.name, c.data_type))
        .collect();
    // Iceberg strings have no length: tpch's varchar(25) is stored as varchar.
    assert_eq!(
        columns,
        [
            ("nationkey".into(), "bigint".into()),
            ("name".into(), "varchar".into()),
            ("regionkey".into(), "bigint".into())
        ]
    );

    // The same generation again (a resumed run whose killed process committed the write but
    // could not record it): the table says it holds this generation; nothing is written.
    let repeated = engine.materialize(&table, &inflight).await.unwrap();
    assert!(repeated.already_committed);
    assert_eq!(repeated.rows, Some(25));
    assert_eq!(repeated.output_identity, outcome.output_identity);

    // A build of the next generation replaces the table with one new snapshot.
    let mut next = table.clone();
    next.generation = 2;
    let again = engine.materialize(&next, &inflight).await.unwrap();
    assert!(!again.already_committed);
    assert_ne!(again.output_identity, outcome.output_identity);
    let state = engine
        .iceberg_state(&table.relation)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(state.snapshots.len(), 2);

    // The view lives in the views catalog and reads the table by its full name.
    let view_sql =
        format!("select name from \"iceberg\".\"{schema}\".\"nations\" where regionkey = 1");
    let view = job(
        &engine,
        &view_model,
        Materialization::View,
        &view_sql,
        TableSpec::default(),
    );
    assert_eq!(
        view.relation.parts,
        ["views", schema.as_str(), "nation_names"]
    );
    engine.materialize(&view, &inflight).await.unwrap();
    assert_eq!(rows(&view.relation).await.len(), 5);
    assert_eq!(
        engine
            .introspect_relation(&view.relation)
            .await
            .unwrap()
            .unwrap()
            .kind,
        RelationKind::View
    );
    let counted = engine
        .execute(
            &parse(&format!("select * from {}", view.relation.quoted())),
            &inflight,
        )
        .await
        .unwrap();
    assert_eq!(counted, 5);

    engine.drop_relation(&view.relation).await.unwrap();
    assert!(engine
        .introspect_relation(&view.relation)
        .await
        .unwrap()
        .is_none());
}

#[tokio::test]
async fn views_on_a_nessie_catalog_are_refused_when_the_adapter_opens() {
    let mut s = settings();
    s.views_catalog = None;
    let error = TrinoEngine::connect(s, HashSet::from(["reports.summary".to_string()]))
        .await
        .err()
        .expect("a view model on a Nessie catalog must be refused");
    assert_eq!(error.code.to_string(), "A009", "{error}");
    assert!(error.message.contains("reports.summary"), "{error}");

    let mut s = settings();
    s.views_catalog = Some("no_such_catalog".into());
    let error = TrinoEngine::connect(s, HashSet::from(["reports.summary".to_string()]))
        .await
        .err()
        .unwrap();
    assert_eq!(error.code.to_string(), "A010", "{error}");
}

#[tokio::test]
async fn an_engine_error_lands_on_the_model_line() {
    let engine = engine(&[]).await;
    let schema = unique("errors");
    let _cleanup = trino_cleanup::DropSchema(schema.clone());
    // Trino refuses comparing varchar with bigint; the bad comparison is on line 3.
    let sql = "select nationkey,\n       name\nfrom tpch.tiny.nation where name = 1";
    let bad = job(
        &engine,
        &format!("{schema}.broken"),
        Materialization::Table,
        sql,
        TableSpec::default(),
    );
    let error = engine
        .materialize(&bad, &InFlight::default())
        .await
        .unwrap_err();
    assert_eq!(error.code.to_string(), "A001", "{error}");
    assert!(!error.retryable);
    assert!(error.message.contains("TYPE_MISMATCH"), "{error}");
    assert!(
        error.message.contains(&format!("{}:3:", bad.path)),
        "{error}"
    );
    assert!(
        engine
            .introspect_relation(&bad.relation)
            .await
            .unwrap()
            .is_none(),
        "nothing was built"
    );
}

#[tokio::test]
async fn cancelling_an_attempt_ends_its_query_in_trino() {
    let engine = std::sync::Arc::new(engine(&[]).await);
    let schema = unique("cancel");
    let _cleanup = trino_cleanup::DropSchema(schema.clone());
    let long = job(
        &engine,
        &format!("{schema}.long"),
        Materialization::Table,
        "select count(*) as n from tpch.sf1000.lineitem where comment like '%phlo%'",
        TableSpec::default(),
    );
    let inflight = InFlight::default();
    let task = {
        let (engine, inflight, long) = (engine.clone(), inflight.clone(), long.clone());
        tokio::spawn(async move { engine.materialize(&long, &inflight).await })
    };
    let id = loop {
        let running = inflight.running();
        // The CREATE SCHEMA comes first; the CTAS is the long one.
        if let Some(id) = running.first() {
            let state = client()
                .execute(&format!(
                    "select query from system.runtime.queries where query_id = '{}'",
                    id.0
                ))
                .await
                .unwrap();
            if state
                .rows
                .first()
                .and_then(|r| r[0].as_str())
                .is_some_and(|q| q.contains("lineitem"))
            {
                break id.clone();
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    // What the scheduler does on --model-timeout / --fail-fast: cancel, then drop.
    engine.cancel(&id).await.unwrap();
    let outcome = tokio::time::timeout(Duration::from_secs(60), task)
        .await
        .unwrap()
        .unwrap();
    let error = outcome.unwrap_err();
    assert_eq!(error.code.to_string(), "A011", "{error}");
    let state = client()
        .execute(&format!(
            "select state, error_code from system.runtime.queries where query_id = '{}'",
            id.0
        ))
        .await
        .unwrap();
    assert_eq!(
        state.rows[0],
        [Value::from("FAILED"), Value::from("USER_CANCELED")]
    );
    assert!(engine
        .introspect_relation(&long.relation)
        .await
        .unwrap()
        .is_none());
}

/// Source rows: (id, v, day).
async fn source(relation: &str, rows: &str) {
    client()
        .execute(&format!("INSERT INTO {relation} VALUES {rows}"))
        .await
        .unwrap();
}

#[tokio::test]
async fn every_incremental_strategy_equals_a_full_rebuild() {
    let engine = engine(&[]).await;
    let schema = unique("inc");
    let _cleanup = [
        trino_cleanup::DropSchema(schema.clone()),
        trino_cleanup::DropSchema(format!("{schema}_src")),
    ];
    let src = format!("iceberg.{schema}_src.events");
    let c = client();
    c.execute(&format!("CREATE SCHEMA iceberg.{schema}_src"))
        .await
        .unwrap();
    c.execute(&format!(
        "CREATE TABLE {src} (id bigint, v varchar, day date)"
    ))
    .await
    .unwrap();
    source(
        &src,
        "(1, 'a', DATE '2026-01-01'), (2, 'b', DATE '2026-01-01'), (3, 'c', DATE '2026-01-02')",
    )
    .await;
    let query = format!("select id, v, day from {src}");
    let strategies = [
        ("append", IncrementalStrategy::Append, vec![]),
        (
            "key",
            IncrementalStrategy::Key {
                columns: vec!["id".into()],
            },
            vec![],
        ),
        (
            "part",
            IncrementalStrategy::Partition {
                columns: vec!["day".into()],
            },
            vec![],
        ),
        (
            "win",
            IncrementalStrategy::Window {
                column: "day".into(),
            },
            vec!["id".to_string()],
        ),
    ];
    let jobs: Vec<MaterializeJob> = strategies
        .iter()
        .map(|(name, strategy, key)| {
            job(
                &engine,
                &format!("{schema}.{name}"),
                Materialization::Incremental,
                &query,
                TableSpec {
                    incremental: Some(strategy.clone()),
                    key: key.clone(),
                    ..TableSpec::default()
                },
            )
        })
        .collect();
    let inflight = InFlight::default();
    for j in &jobs {
        let first = engine.materialize(j, &inflight).await.unwrap();
        assert_eq!(first.write.as_deref(), Some("full"), "{}", j.model_name);
    }
    // A new row and a changed row (id 2), both past the window's watermark (2026-01-02),
    // leaving one partition and entering a new one.
    c.execute(&format!("DELETE FROM {src} WHERE id = 2"))
        .await
        .unwrap();
    source(
        &src,
        "(2, 'b2', DATE '2026-01-03'), (4, 'd', DATE '2026-01-03')",
    )
    .await;
    for j in &jobs {
        let before = engine
            .iceberg_state(&j.relation)
            .await
            .unwrap()
            .unwrap()
            .snapshots
            .len();
        let outcome = engine.materialize(j, &inflight).await.unwrap();
        assert_ne!(
            outcome.write.as_deref(),
            Some("full"),
            "{} was rebuilt, not written incrementally",
            j.model_name
        );
        // One write, one snapshot; repeating it (a resumed generation) adds none.
        let after = engine
            .iceberg_state(&j.relation)
            .await
            .unwrap()
            .unwrap()
            .snapshots
            .len();
        assert_eq!(
            after,
            before + usize::from(outcome.write.as_deref() != Some("no change")),
            "{}",
            j.model_name
        );
        let repeat = engine.materialize(j, &inflight).await.unwrap();
        assert_eq!(
            repeat.write.as_deref(),
            Some("no change"),
            "{}",
            j.model_name
        );
        assert_eq!(
            engine
                .iceberg_state(&j.relation)
                .await
                .unwrap()
                .unwrap()
                .snapshots
                .len(),
            after,
            "{}",
            j.model_name
        );
    }
    // The same query built in full.
    let full = job(
        &engine,
        &format!("{schema}.full"),
        Materialization::Table,
        &query,
        TableSpec::default(),
    );
    engine.materialize(&full, &inflight).await.unwrap();
    let expected = rows(&full.relation).await;
    assert_eq!(expected.len(), 4);
    for j in &jobs {
        let got = rows(&j.relation).await;
        match j.model_name.rsplit('.').next().unwrap() {
            // Append keeps the old version of a changed row (like the local engine).
            "append" => assert_eq!(got.len(), 5, "{got:?}"),
            _ => assert_eq!(got, expected, "{}", j.model_name),
        }
    }
    // --full-refresh (a later run) rebuilds.
    let mut refresh = jobs[0].clone();
    refresh.table.full_rebuild = true;
    refresh.generation = 2;
    assert_eq!(
        engine
            .materialize(&refresh, &inflight)
            .await
            .unwrap()
            .write
            .as_deref(),
        Some("full")
    );
    assert_eq!(rows(&refresh.relation).await, expected);
}
