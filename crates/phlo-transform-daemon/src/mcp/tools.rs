//! The tools: one per agent question of SPEC §84, each answered by the daemon's read of it
//! ([`crate::reads`], the document `--json` prints). A read that fails is a tool result with
//! `isError` and the daemon's error body (`{"error": {"code", "message", "help"},
//! "diagnostics"}`), so the agent sees the same code and help line the command line shows.

use crate::context::Context;
use crate::http::Call;
use crate::reads::{self, Read};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, Implementation, ServerCapabilities, ServerInfo};
use rmcp::{tool, tool_handler, tool_router, ErrorData};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use std::sync::Arc;

/// The MCP server: the context reads answer from, and the tools.
#[derive(Clone)]
pub struct Agent {
    cx: Arc<Context>,
    tool_router: ToolRouter<Agent>,
}

#[derive(Deserialize, JsonSchema)]
pub struct ModelParam {
    /// A model's name (`shared.orders`); where a tool says so, a source's name too.
    pub model: String,
}

#[derive(Deserialize, JsonSchema)]
pub struct ColumnParam {
    /// A column as `<model or source>.<column>` (`shared.orders.amount`).
    pub column: String,
}

#[derive(Deserialize, JsonSchema)]
pub struct TargetParam {
    /// A model or source (`raw.orders`) or one of its columns (`raw.orders.amount`).
    pub target: String,
}

#[derive(Deserialize, JsonSchema)]
pub struct EnvironmentParam {
    /// The environment to plan against (a ref such as `feature-x`); main when absent.
    pub environment: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
pub struct RebuildParam {
    /// A model's name (`shared.orders`).
    pub model: String,
    /// The environment to plan against; main when absent.
    pub environment: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
pub struct BaseParam {
    /// The Git ref the pull request merges into (`main`, `origin/main`).
    pub base: String,
}

#[derive(Deserialize, JsonSchema)]
pub struct LimitParam {
    /// How many of the newest runs to read (default 20).
    pub limit: Option<i64>,
}

#[derive(Deserialize, JsonSchema)]
pub struct GatesParam {
    /// Only the gates on this model; the whole workspace when absent.
    pub model: Option<String>,
}

/// A read's `GET` query from a tool's arguments (absent ones left out).
fn query<const N: usize>(params: [(&str, Option<String>); N]) -> Call {
    Call::get(
        params
            .into_iter()
            .filter_map(|(name, value)| Some((name.to_string(), value?))),
    )
}

/// Keeps only `fields` (and `diagnostics`) of a document.
fn only(fields: &[&str], document: Value) -> Value {
    match document {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter(|(k, _)| k == "diagnostics" || fields.contains(&k.as_str()))
                .collect(),
        ),
        other => other,
    }
}

impl Agent {
    pub fn new(cx: Arc<Context>) -> Agent {
        Agent {
            cx,
            tool_router: Agent::tool_router(),
        }
    }

    /// Runs `read` on a blocking thread (reads wait on the runtime themselves) and makes its
    /// document, or its error, the tool's result.
    async fn answer(
        &self,
        read: impl FnOnce(&Context) -> Read + Send + 'static,
    ) -> Result<CallToolResult, ErrorData> {
        let cx = self.cx.clone();
        let answered = tokio::task::spawn_blocking(move || read(&cx))
            .await
            .map_err(|e| ErrorData::internal_error(format!("the read stopped: {e}"), None))?;
        Ok(match answered {
            Ok(document) => CallToolResult::structured(document),
            Err(e) => CallToolResult::structured_error(e.body()),
        })
    }
}

#[tool_router]
impl Agent {
    #[tool(
        description = "Compile the workspace and report every diagnostic (code, location, help) with the counts of models, sources and tests: `phlo-transform check --json`."
    )]
    async fn check(&self) -> Result<CallToolResult, ErrorData> {
        self.answer(reads::check).await
    }

    #[tool(
        description = "What does this model depend on? Its upstream models and sources with their depth, its downstream, and each output column's input columns: `phlo-transform lineage <model> --json`."
    )]
    async fn depends_on(
        &self,
        Parameters(p): Parameters<ModelParam>,
    ) -> Result<CallToolResult, ErrorData> {
        let call = query([("target", Some(p.model))]);
        self.answer(move |cx| reads::lineage(cx, &call)).await
    }

    #[tool(
        description = "Where does this column originate? Its direct inputs (the value is computed from them) and indirect ones (they filter, join or group it), and its whole upstream and downstream chain: `phlo-transform lineage <model>.<column> --json`."
    )]
    async fn column_origin(
        &self,
        Parameters(p): Parameters<ColumnParam>,
    ) -> Result<CallToolResult, ErrorData> {
        let call = query([("target", Some(p.column))]);
        self.answer(move |cx| reads::lineage(cx, &call)).await
    }

    #[tool(
        description = "What breaks if this model, source or column is removed or changed? The downstream columns, models, tests and workflows it reaches, and the models whose lineage is unknown: `phlo-transform impact <target> --json`."
    )]
    async fn what_breaks_if_removed(
        &self,
        Parameters(p): Parameters<TargetParam>,
    ) -> Result<CallToolResult, ErrorData> {
        let call = query([("target", Some(p.target))]);
        self.answer(move |cx| reads::impact(cx, &call)).await
    }

    #[tool(
        description = "Which models, tests and workflows consume this model or source (everything downstream of it)? The consumer part of `phlo-transform impact <model> --json`."
    )]
    async fn consumers(
        &self,
        Parameters(p): Parameters<ModelParam>,
    ) -> Result<CallToolResult, ErrorData> {
        let call = query([("target", Some(p.model))]);
        self.answer(move |cx| {
            reads::impact(cx, &call).map(|d| only(&["target", "models", "tests", "workflows"], d))
        })
        .await
    }

    #[tool(
        description = "The inferred schema of a model (each column's type and nullability as the compiler derived it), with its dependencies, tests and recorded state; a source's name shows the source: `phlo-transform inspect <model> --json`."
    )]
    async fn inferred_schema(
        &self,
        Parameters(p): Parameters<ModelParam>,
    ) -> Result<CallToolResult, ErrorData> {
        self.answer(move |cx| reads::inspect(cx, &Call::get([]), &p.model))
            .await
    }

    #[tool(
        description = "Which models changed? What a run would build now against the recorded state, each model with its action and every reason; nothing is stored: a preview of `phlo-transform plan --json`."
    )]
    async fn what_changed(
        &self,
        Parameters(p): Parameters<EnvironmentParam>,
    ) -> Result<CallToolResult, ErrorData> {
        let call = query([("environment", p.environment)]);
        self.answer(move |cx| reads::plan(cx, &call)).await
    }

    #[tool(
        description = "Why will this model rebuild (or not)? The plan preview of this model alone: its action and the reasons (its SQL, an upstream version, a source's state, a schema change, …): `phlo-transform plan -s <model> --json`."
    )]
    async fn why_rebuild(
        &self,
        Parameters(p): Parameters<RebuildParam>,
    ) -> Result<CallToolResult, ErrorData> {
        let call = query([("select", Some(p.model)), ("environment", p.environment)]);
        self.answer(move |cx| reads::plan(cx, &call)).await
    }

    #[tool(
        description = "What will this pull request change in production? The lineage diff of the working tree against a Git ref: models and columns added, removed or changed, with what they reach: `phlo-transform lineage --diff <base> --json`."
    )]
    async fn pr_changes(
        &self,
        Parameters(p): Parameters<BaseParam>,
    ) -> Result<CallToolResult, ErrorData> {
        let call = query([("base", Some(p.base))]);
        self.answer(move |cx| reads::lineage_diff(cx, &call)).await
    }

    #[tool(
        description = "Which models and tests failed previously? The failed nodes of the newest runs with their error code and message, newest first: `phlo-transform state failures --json`."
    )]
    async fn failures(
        &self,
        Parameters(p): Parameters<LimitParam>,
    ) -> Result<CallToolResult, ErrorData> {
        let call = query([("limit", p.limit.map(|n| n.to_string()))]);
        self.answer(move |cx| reads::failures(cx, &call)).await
    }

    #[tool(
        description = "What are the current quality gates? Every data test with the models it reads and its newest result, every contract, and every source freshness requirement (of one model when named): `phlo-transform gates [<model>] --json`."
    )]
    async fn gates(
        &self,
        Parameters(p): Parameters<GatesParam>,
    ) -> Result<CallToolResult, ErrorData> {
        let call = query([("model", p.model)]);
        self.answer(move |cx| reads::gates(cx, &call)).await
    }

    #[tool(
        description = "Re-read the workspace's files now (they are also re-read when they change) and report the fresh diagnostics, as `check`."
    )]
    async fn reload(&self) -> Result<CallToolResult, ErrorData> {
        self.answer(|cx| {
            cx.live.reload();
            reads::check(cx)
        })
        .await
    }
}

#[tool_handler]
impl rmcp::ServerHandler for Agent {
    fn get_info(&self) -> ServerInfo {
        ServerInfo {
            server_info: Implementation {
                name: "phlo-transform".into(),
                version: env!("CARGO_PKG_VERSION").into(),
                ..Implementation::default()
            },
            instructions: Some(
                "phlo-transform's compiler and state for one workspace: dependencies, column \
                 lineage, impact, inferred schemas, plans with reasons, failures and quality \
                 gates. Every result is the document the command line prints with --json."
                    .into(),
            ),
            capabilities: ServerCapabilities::builder().enable_tools().build(),
            ..ServerInfo::default()
        }
    }
}
