//! `phlo-transform mcp` with a real MCP client: rmcp's client over the built binary's
//! stdin/stdout, on a copy of testdata/lsp. The tools' results are compared with what the
//! same commands print with `--json`.

mod common;

use rmcp::model::{CallToolRequestParam, CallToolResult};
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{json, Value};
use std::path::Path;
use std::process::Stdio;

type Client = RunningService<RoleClient, ()>;

async fn connect(root: &Path) -> (Client, tokio::process::Child) {
    let mut child = tokio::process::Command::new(common::bin())
        .args(["-C", root.to_str().unwrap(), "mcp", "--poll-ms", "50"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("the binary starts");
    let stdout = child.stdout.take().unwrap();
    let stdin = child.stdin.take().unwrap();
    let client = ().serve((stdout, stdin)).await.expect("the MCP handshake");
    (client, child)
}

/// Calls `tool` with `arguments`; `(is_error, structured result)`.
async fn call(client: &Client, tool: &str, arguments: Value) -> (bool, Value) {
    let result: CallToolResult = client
        .call_tool(CallToolRequestParam {
            name: tool.to_string().into(),
            arguments: arguments.as_object().cloned(),
        })
        .await
        .unwrap_or_else(|e| panic!("{tool}: the call failed: {e}"));
    let document = result
        .structured_content
        .clone()
        .unwrap_or_else(|| panic!("{tool}: no structured content in {result:?}"));
    (result.is_error == Some(true), document)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_questions_over_mcp_are_the_commands_documents() {
    let dir = common::workspace("lsp");
    let root = dir.path().to_path_buf();
    // A data test that fails: one paid order has an amount over 10.
    common::write_file(
        &root,
        "tests/small_orders.sql",
        "select id from shop.orders where amount > 10\n",
    );
    let cli = |args: &[&str]| common::run(&root, args).json();
    let run = common::run(&root, &["run", "--json"]);
    assert_eq!(
        run.json()["status"],
        "failed",
        "the test should fail: {}",
        run.stdout
    );

    let (client, mut child) = connect(&root).await;
    let info = client.peer_info().expect("the server introduced itself");
    assert_eq!(info.server_info.name, "phlo-transform", "{info:?}");
    let tools = client.list_all_tools().await.expect("tools/list");
    let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "check",
            "column_origin",
            "consumers",
            "depends_on",
            "failures",
            "gates",
            "inferred_schema",
            "pr_changes",
            "reload",
            "what_breaks_if_removed",
            "what_changed",
            "why_rebuild"
        ]
    );
    let described = tools.iter().find(|t| t.name == "depends_on").unwrap();
    assert_eq!(
        described.input_schema["required"],
        json!(["model"]),
        "{described:?}"
    );

    let (error, depends) = call(
        &client,
        "depends_on",
        json!({"model": "shop.customer_totals"}),
    )
    .await;
    assert!(!error, "{depends}");
    assert_eq!(depends, cli(&["lineage", "shop.customer_totals", "--json"]));
    let upstream: Vec<&str> = depends["upstream"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["name"].as_str().unwrap())
        .collect();
    assert!(upstream.contains(&"shop.orders"), "{depends}");

    let (_, schema) = call(&client, "inferred_schema", json!({"model": "shop.orders"})).await;
    assert_eq!(schema, cli(&["inspect", "shop.orders", "--json"]));

    let (_, origin) = call(
        &client,
        "column_origin",
        json!({"column": "shop.customer_totals.total"}),
    )
    .await;
    assert_eq!(
        origin,
        cli(&["lineage", "shop.customer_totals.total", "--json"])
    );

    let (_, consumers) = call(&client, "consumers", json!({"model": "raw.orders"})).await;
    let impact = cli(&["impact", "raw.orders", "--json"]);
    assert_eq!(consumers["models"], impact["models"], "{consumers}");
    assert!(consumers.get("columns").is_none(), "{consumers}");

    let (_, failures) = call(&client, "failures", json!({})).await;
    assert_eq!(failures, cli(&["state", "failures", "--json"]));
    let failed: Vec<&str> = failures["failures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["node"].as_str().unwrap())
        .collect();
    assert_eq!(failed, ["small_orders"], "{failures}");

    let (_, gates) = call(&client, "gates", json!({"model": "shop.orders"})).await;
    assert_eq!(gates, cli(&["gates", "shop.orders", "--json"]));
    assert_eq!(gates["tests"][0]["last"]["status"], "failed", "{gates}");

    let (_, why) = call(&client, "why_rebuild", json!({"model": "shop.orders"})).await;
    let decisions: Vec<&str> = why["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["decision"].as_str().unwrap())
        .collect();
    assert_eq!(decisions, ["skip"], "{why}");

    // A name that resolves to nothing: the error and help line the command line shows.
    let (error, unknown) = call(&client, "inferred_schema", json!({"model": "shop.ordrs"})).await;
    assert!(error, "{unknown}");
    assert_eq!(unknown["error"]["code"], "P008", "{unknown}");
    assert!(unknown["error"]["help"].is_string(), "{unknown}");

    // An edit on disk is seen by the next answer after `reload`.
    common::write_file(
        &root,
        "transforms/shop/big_orders.sql",
        "select id from shop.orders where amount > 10\n",
    );
    let (_, check) = call(&client, "reload", json!({})).await;
    assert_eq!(check["models"].as_array().unwrap().len(), 3, "{check}");

    // Closing stdin ends the session and the process, cleanly.
    client.cancel().await.expect("the client closes");
    let status = tokio::time::timeout(std::time::Duration::from_secs(30), child.wait())
        .await
        .expect("the server exits once stdin closes")
        .unwrap();
    assert!(status.success(), "{status:?}");
}
