//! The route table: which handler answers a method and a path, behind the bearer token. The
//! table ([`ROUTES`]) is data, so the OpenAPI document is checked against it.

use crate::api_error::ApiError;
use crate::http::{Call, Reply};
use crate::operations::{Operations, Submission};
use crate::{context::Context, openapi, reads};
use phlo_transform_core::diagnostic::codes;
use serde_json::json;

/// One route: its method and path, `{name}` standing for one path segment.
pub struct Route {
    pub method: &'static str,
    pub path: &'static str,
}

/// Every route the daemon serves, in the order they are matched.
pub const ROUTES: &[Route] = &[
    route("GET", "/status"),
    route("GET", "/v1/openapi.json"),
    route("GET", "/v1/check"),
    route("GET", "/v1/models"),
    route("GET", "/v1/models/{model}"),
    route("GET", "/v1/lineage"),
    route("GET", "/v1/graph"),
    route("GET", "/v1/impact"),
    route("GET", "/v1/lineage-diff"),
    route("GET", "/v1/plan"),
    route("GET", "/v1/state/runs"),
    route("GET", "/v1/state/runs/{run}"),
    route("GET", "/v1/state/models/{model}"),
    route("GET", "/v1/state/failures"),
    route("GET", "/v1/state/evidence/{ref}"),
    route("GET", "/v1/gates"),
    route("GET", "/v1/refs"),
    route("GET", "/v1/refs/{ref}"),
    route("GET", "/v1/operations"),
    route("POST", "/v1/operations"),
    route("GET", "/v1/operations/{id}"),
    route("POST", "/v1/operations/{id}/cancel"),
];

const fn route(method: &'static str, path: &'static str) -> Route {
    Route { method, path }
}

impl Route {
    /// The path's `{name}` segments' values when `segments` is this route's path.
    fn matches<'s>(&self, segments: &'s [String]) -> Option<Vec<&'s str>> {
        let pattern: Vec<&str> = self.path.split('/').filter(|s| !s.is_empty()).collect();
        if pattern.len() != segments.len() {
            return None;
        }
        let mut values = Vec::new();
        for (p, s) in pattern.iter().zip(segments) {
            if p.starts_with('{') {
                values.push(s.as_str());
            } else if p != s {
                return None;
            }
        }
        Some(values)
    }
}

/// What the daemon answers from: the context and the operations.
pub struct Daemon {
    pub cx: std::sync::Arc<Context>,
    pub operations: std::sync::Arc<Operations>,
    /// `--token` / `PHLO_DAEMON_TOKEN`: required on every route but `/status`.
    pub token: Option<String>,
}

impl Daemon {
    /// Answers `call`.
    pub fn handle(&self, call: &Call) -> Reply {
        match self.route(call) {
            Ok(reply) => reply,
            Err(e) => Reply::error(&e),
        }
    }

    fn route(&self, call: &Call) -> Result<Reply, ApiError> {
        let mut path_matched = false;
        for route in ROUTES {
            let Some(values) = route.matches(&call.path) else {
                continue;
            };
            path_matched = true;
            if route.method != call.method {
                continue;
            }
            if route.path != "/status" {
                self.authorize(call)?;
            }
            return self.answer(route.method, route.path, &values, call);
        }
        if path_matched {
            return Err(ApiError::new(
                405,
                codes::API_METHOD_NOT_ALLOWED,
                format!("{} is not served for /{}", call.method, call.path.join("/")),
            ));
        }
        Err(ApiError::new(
            404,
            codes::API_NOT_FOUND,
            format!("no endpoint /{}", call.path.join("/")),
        ))
    }

    fn authorize(&self, call: &Call) -> Result<(), ApiError> {
        match &self.token {
            None => Ok(()),
            Some(token) if call.bearer.as_deref() == Some(token.as_str()) => Ok(()),
            Some(_) => Err(ApiError::new(
                401,
                codes::API_UNAUTHORIZED,
                match call.bearer {
                    None => "this daemon requires `Authorization: Bearer <token>`",
                    Some(_) => "the bearer token is not this daemon's",
                },
            )),
        }
    }

    fn answer(
        &self,
        method: &str,
        path: &str,
        values: &[&str],
        call: &Call,
    ) -> Result<Reply, ApiError> {
        let cx = &self.cx;
        let ok = |value: serde_json::Value| Ok(Reply::json(200, &value));
        match (method, path) {
            ("GET", "/status") => ok(self.status()),
            ("GET", "/v1/openapi.json") => ok(openapi::document()),
            ("GET", "/v1/check") => ok(reads::check(cx)?),
            ("GET", "/v1/models") => ok(reads::models(cx, call)?),
            ("GET", "/v1/models/{model}") => ok(reads::inspect(cx, call, values[0])?),
            ("GET", "/v1/lineage") => ok(reads::lineage(cx, call)?),
            ("GET", "/v1/graph") => ok(reads::graph(cx)?),
            ("GET", "/v1/impact") => ok(reads::impact(cx, call)?),
            ("GET", "/v1/lineage-diff") => ok(reads::lineage_diff(cx, call)?),
            ("GET", "/v1/plan") => ok(reads::plan(cx, call)?),
            ("GET", "/v1/state/runs") => ok(reads::runs(cx, call)?),
            ("GET", "/v1/state/runs/{run}") => ok(reads::run(cx, values[0])?),
            ("GET", "/v1/state/models/{model}") => ok(reads::model_history(cx, call, values[0])?),
            ("GET", "/v1/state/failures") => ok(reads::failures(cx, call)?),
            ("GET", "/v1/state/evidence/{ref}") => ok(reads::evidence(cx, call, values[0])?),
            ("GET", "/v1/gates") => ok(reads::gates(cx, call)?),
            ("GET", "/v1/refs") => ok(reads::refs(cx)?),
            ("GET", "/v1/refs/{ref}") => ok(reads::reference(cx, values[0])?),
            ("GET", "/v1/operations") => ok(json!({ "operations": self.operations.list() })),
            ("POST", "/v1/operations") => self.submit(call),
            ("GET", "/v1/operations/{id}") => {
                Ok(Reply::json(200, &self.operations.get(values[0])?))
            }
            ("POST", "/v1/operations/{id}/cancel") => {
                Ok(Reply::json(202, &self.operations.cancel(values[0])?))
            }
            _ => unreachable!("every route in ROUTES has an answer"),
        }
    }

    /// `POST /v1/operations`: 202 with the new operation, 200 with the first one for a
    /// replayed idempotency key.
    fn submit(&self, call: &Call) -> Result<Reply, ApiError> {
        let submission: Submission = serde_json::from_slice(&call.body)
            .map_err(|e| ApiError::bad_request(format!("the submission is not valid: {e}")))?;
        let (op, replayed) = self
            .operations
            .submit(submission, call.idempotency_key.clone())?;
        Ok(Reply::json(if replayed { 200 } else { 202 }, &op))
    }

    /// `GET /status`: up, which compilation, how many operations are in flight. Never needs
    /// the token, so a supervisor can probe it.
    fn status(&self) -> serde_json::Value {
        let published = self.cx.live.snapshot();
        let c = &published.compilation;
        json!({
            "status": "ok",
            "version": env!("CARGO_PKG_VERSION"),
            "root": self.cx.live.root().display().to_string(),
            "generation": published.generation,
            "models": c.models.len(),
            "errors": published.diagnostics.iter().filter(|d| d.is_error()).count(),
            "compilable": published.fatal.is_none(),
            "operations_in_flight": self.operations.in_flight(),
            "auth": self.token.is_some(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::ROUTES;
    use std::collections::BTreeSet;

    /// The OpenAPI document describes exactly the routes the table serves.
    #[test]
    fn the_openapi_document_lists_every_route_and_no_other() {
        let document = crate::openapi::document();
        let mut documented = BTreeSet::new();
        for (path, item) in document["paths"].as_object().unwrap() {
            for method in item.as_object().unwrap().keys() {
                documented.insert((method.to_uppercase(), path.clone()));
            }
        }
        let served: BTreeSet<(String, String)> = ROUTES
            .iter()
            .map(|r| (r.method.to_string(), r.path.to_string()))
            .collect();
        assert_eq!(documented, served);
    }
}
