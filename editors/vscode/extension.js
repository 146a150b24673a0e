// Starts `phlo-transform lsp` for the SQL files of the workspace.
const vscode = require("vscode");
const { LanguageClient } = require("vscode-languageclient/node");

let client;

function activate() {
  const command = vscode.workspace.getConfiguration("phlo-transform").get("path");
  client = new LanguageClient(
    "phlo-transform",
    "phlo-transform",
    { command, args: ["lsp"] },
    {
      documentSelector: [{ scheme: "file", language: "sql" }],
      synchronize: { fileEvents: vscode.workspace.createFileSystemWatcher("**/*.{sql,toml,csv,parquet}") },
    },
  );
  return client.start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
