//! `phlo-transform lsp` driven over JSON-RPC on stdio, as an editor drives it: the real
//! binary, a copy of testdata/lsp, and the exact answers.

mod common;

#[path = "support/lsp_client.rs"]
mod lsp_client;

use lsp_client::Client;
use serde_json::{json, Value};
use std::path::Path;

fn uri(root: &Path, rel: &str) -> String {
    format!("file://{}/{rel}", root.display())
}

fn at(uri: &str, line: u32, character: u32) -> Value {
    json!({"textDocument": {"uri": uri}, "position": {"line": line, "character": character}})
}

#[test]
fn an_editor_session_over_json_rpc() {
    let dir = common::workspace("lsp");
    let root = dir.path().canonicalize().unwrap();
    let totals = uri(&root, "transforms/shop/customer_totals.sql");
    let orders = uri(&root, "transforms/shop/orders.sql");
    let mut client = Client::start(&common::bin(), &root);

    let init = client.request(
        "initialize",
        json!({"processId": null, "rootUri": format!("file://{}", root.display()),
               "capabilities": {"general": {"positionEncodings": ["utf-16"]}}}),
    );
    let caps = &init["result"]["capabilities"];
    assert_eq!(caps["positionEncoding"], "utf-16", "{init}");
    // Incremental: the editor sends the ranges it changed.
    assert_eq!(caps["textDocumentSync"]["change"], 2, "{init}");
    for provider in [
        "hoverProvider",
        "definitionProvider",
        "referencesProvider",
        "renameProvider",
    ] {
        assert_eq!(caps[provider], true, "{provider}: {init}");
    }
    assert_eq!(
        caps["completionProvider"]["triggerCharacters"],
        json!(["."])
    );
    client.notify("initialized", json!({}));

    // A typo is reported as typed (no save), with its code, range and help…
    let broken =
        "select customer_id, sum(amont) as total\nfrom shop.orders\ngroup by customer_id\n";
    client.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": totals, "languageId": "sql", "version": 1, "text": broken}}),
    );
    let diagnostics = client.diagnostics_for(&totals);
    assert_eq!(diagnostics.as_array().unwrap().len(), 1, "{diagnostics:#}");
    let range = json!({"start": {"line": 0, "character": 24}, "end": {"line": 0, "character": 29}});
    let here = json!({"uri": totals, "range": range});
    assert_eq!(
        diagnostics[0],
        json!({
            "range": range,
            "severity": 1,
            "code": "T001",
            "source": "phlo-transform",
            "message": "column 'amont' not found",
            "relatedInformation": [
                {"location": here, "message": "help: check the column name against the relation's columns (`phlo-transform inspect <model>` lists them)"},
                {"location": here, "message": "note: Schema error: No field named amont. Valid fields are orders.id, orders.customer_id, orders.amount."}
            ],
            "data": {"suggestions": ["orders.amount"]}
        }),
        "{diagnostics:#}"
    );

    // …and goes away when fixed, by a change of one range (`amont` → `amount`).
    let insert_u =
        json!({"start": {"line": 0, "character": 27}, "end": {"line": 0, "character": 27}});
    client.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": totals, "version": 2}, "contentChanges": [{"range": insert_u, "text": "u"}]}),
    );
    assert_eq!(client.diagnostics_for(&totals), json!([]));

    // Hover on a relation: the model, its place in the graph, its columns.
    let hover = client.request("textDocument/hover", at(&totals, 1, 8));
    assert_eq!(
        hover["result"],
        json!({
            "contents": {"kind": "markdown", "value": "**model** `shop.orders` · view\n\n`transforms/shop/orders.sql` · 1 upstream · 1 downstream\n\n| column | type | nullable |\n|---|---|---|\n| id | Int64 | yes |\n| customer_id | Int64 | yes |\n| amount | Float64 | yes |\n"},
            "range": {"start": {"line": 1, "character": 5}, "end": {"line": 1, "character": 16}}
        }),
        "{hover:#}"
    );
    // Hover on an output column: its type and column lineage.
    let hover = client.request("textDocument/hover", at(&totals, 0, 36));
    assert_eq!(
        hover["result"]["contents"]["value"],
        "**column** `shop.customer_totals.total`: `Float64`, nullable\n\ndirect inputs: `shop.orders.amount` (aggregation)\n\nindirect inputs: `shop.orders.customer_id` (group_by)\n",
        "{hover:#}"
    );

    // Definition: the relation's model file; an input column where the upstream model writes it.
    let def = client.request("textDocument/definition", at(&totals, 1, 8));
    assert_eq!(
        def["result"],
        json!([{"uri": orders, "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}}])
    );
    let def = client.request("textDocument/definition", at(&totals, 0, 26));
    assert_eq!(
        def["result"],
        json!([{"uri": orders, "range": {"start": {"line": 1, "character": 24}, "end": {"line": 1, "character": 30}}}])
    );
    // The model's own column leads to the column it comes from.
    let def = client.request("textDocument/definition", at(&totals, 0, 36));
    assert_eq!(def["result"][0]["uri"], orders, "{def:#}");

    // References of a model: every relation that reads it.
    let refs = client.request(
        "textDocument/references",
        json!({"textDocument": {"uri": totals}, "position": {"line": 1, "character": 8},
               "context": {"includeDeclaration": false}}),
    );
    assert_eq!(
        refs["result"],
        json!([{"uri": totals, "range": {"start": {"line": 1, "character": 5}, "end": {"line": 1, "character": 16}}}])
    );

    // Completion: the columns of what the model reads, then models and sources.
    let completion = client.request("textDocument/completion", at(&totals, 0, 26));
    let labels: Vec<&str> = completion["result"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["label"].as_str().unwrap())
        .collect();
    assert_eq!(labels, vec!["amount"], "{completion:#}");
    let completion = client.request("textDocument/completion", at(&totals, 1, 5));
    let items = &completion["result"]["items"];
    let labels: Vec<&str> = items
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["label"].as_str().unwrap())
        .collect();
    assert_eq!(
        labels,
        vec!["id", "customer_id", "amount", "shop.orders", "raw.orders"],
        "{completion:#}"
    );
    assert_eq!(items[0]["detail"], "Int64 · shop.orders");

    // Rename of a model: every reader edited, the file moved.
    let rename = client.request(
        "textDocument/rename",
        json!({"textDocument": {"uri": totals}, "position": {"line": 1, "character": 8}, "newName": "shop.paid_orders"}),
    );
    assert_eq!(
        rename["result"],
        json!({"documentChanges": [
            {"textDocument": {"uri": totals, "version": null},
             "edits": [{"range": {"start": {"line": 1, "character": 5}, "end": {"line": 1, "character": 16}}, "newText": "shop.paid_orders"}]},
            {"kind": "rename", "oldUri": orders, "newUri": uri(&root, "transforms/shop/paid_orders.sql")}
        ]}),
        "{rename:#}"
    );
    let refused = client.request(
        "textDocument/rename",
        json!({"textDocument": {"uri": totals}, "position": {"line": 1, "character": 8}, "newName": "shop.customer_totals"}),
    );
    assert_eq!(
        refused["error"]["message"],
        "a model named `shop.customer_totals` already exists"
    );

    // The plan of the model in a file, previewed (nothing stored).
    let plan = client.request(
        "workspace/executeCommand",
        json!({"command": "phlo-transform.plan", "arguments": [orders]}),
    );
    let rows = plan["result"]["models"]
        .as_array()
        .unwrap_or_else(|| panic!("{plan:#}"));
    let decisions: Vec<(&str, &str)> = rows
        .iter()
        .map(|m| (m["name"].as_str().unwrap(), m["decision"].as_str().unwrap()))
        .collect();
    assert_eq!(decisions, [("shop.orders", "build")], "{plan:#}");
    let runs = common::run(&root, &["state", "runs", "--json"]).json();
    assert_eq!(runs["runs"], json!([]), "a preview stores nothing: {runs}");
    let not_a_model = client.request(
        "workspace/executeCommand",
        json!({"command": "phlo-transform.plan", "arguments": [uri(&root, "phlo.toml")]}),
    );
    assert_eq!(not_a_model["error"]["code"], -32602, "{not_a_model:#}");
    assert_eq!(
        caps["executeCommandProvider"]["commands"],
        json!(["phlo-transform.plan"])
    );

    // A did-you-mean is a quick fix.
    let typo = "select customer_id, sum(amount) as total\nfrom shop.order\ngroup by customer_id\n";
    client.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": totals, "version": 3}, "contentChanges": [{"text": typo}]}),
    );
    let diagnostics = client.diagnostics_for(&totals);
    let d = diagnostics[0].clone();
    assert_eq!(d["code"], "R001", "{diagnostics:#}");
    let actions = client.request(
        "textDocument/codeAction",
        json!({"textDocument": {"uri": totals}, "range": d["range"], "context": {"diagnostics": [d]}}),
    );
    assert_eq!(
        actions["result"][0]["title"], "Replace with `shop.orders`",
        "{actions:#}"
    );
    assert_eq!(
        actions["result"][0]["edit"]["changes"][&totals][0]["newText"],
        "shop.orders"
    );

    let shutdown = client.request("shutdown", Value::Null);
    assert_eq!(shutdown["result"], Value::Null);
    client.notify("exit", Value::Null);
    let status = client.child.wait().unwrap();
    assert!(status.success(), "{status}");
}

/// Issue 39's bad input through the server: a 100,000-term expression and a 10 MB buffer that
/// does not parse are coded diagnostics on their file, and the server goes on answering.
#[test]
fn huge_and_deep_buffers_are_diagnostics_not_crashes() {
    let dir = common::workspace("lsp");
    let root = dir.path().canonicalize().unwrap();
    let deep = uri(&root, "transforms/shop/deep.sql");
    let huge = uri(&root, "transforms/shop/huge.sql");
    let orders = uri(&root, "transforms/shop/orders.sql");
    let mut client = Client::start(&common::bin(), &root);
    client.request(
        "initialize",
        json!({"processId": null, "rootUri": format!("file://{}", root.display()),
               "capabilities": {}}),
    );
    client.notify("initialized", json!({}));

    let codes = |diagnostics: &Value| -> Vec<String> {
        diagnostics
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["code"].as_str().unwrap_or_default().to_string())
            .collect()
    };
    let plus = format!("select {} as x\n", vec!["1"; 100_000].join("+"));
    client.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": deep, "languageId": "sql", "version": 1, "text": plus}}),
    );
    let diagnostics = client.diagnostics_for(&deep);
    assert_eq!(codes(&diagnostics), ["S004"], "{diagnostics:#}");

    // 10 MB: a select list that never ends in a valid expression.
    let garbage = format!("select {}\n", "a b c ".repeat(10 * 1024 * 1024 / 6));
    assert!(garbage.len() >= 10 * 1024 * 1024 - 16);
    client.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": huge, "languageId": "sql", "version": 1, "text": garbage}}),
    );
    let diagnostics = client.diagnostics_for(&huge);
    let found = codes(&diagnostics);
    assert!(found.len() == 1 && found[0].starts_with('S'), "{found:?}");

    // The rest of the workspace is still answered.
    let hover = client.request("textDocument/hover", at(&orders, 0, 8));
    assert!(hover["error"].is_null(), "{hover:#}");
    let shutdown = client.request("shutdown", Value::Null);
    assert_eq!(shutdown["result"], Value::Null);
    client.notify("exit", Value::Null);
    let status = client.child.wait().unwrap();
    assert!(status.success(), "{status}");
}
