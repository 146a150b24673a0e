//! A Nessie REST API v2 client (base `http://host:19120/api/v2`): the catalog operations an
//! environment needs (SPEC §70), separate from SQL execution.
//!
//! - references: list, look up (name → hash), create a branch from a reference, delete,
//!   reassign (rollback to an earlier hash);
//! - contents: what a key (`namespace.table`) is on a reference — for an Iceberg table its
//!   `metadataLocation`, snapshot, schema and partition-spec ids;
//! - merge of one branch into another with conflicts reported, and the diff of two references.
//!
//! Write operations name the expected head (`branch@hash`); a moved branch answers 409
//! `REFERENCE_CONFLICT`, reported as [`NessieErrorKind::Conflict`]. Failures come as Nessie's
//! JSON error (`status`, `reason`, `message`, `errorCode`).

use reqwest::{Client, Method, StatusCode};
use serde_json::{json, Value};
use std::time::Duration;
use url::Url;

/// A branch or tag at a commit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reference {
    /// `BRANCH` or `TAG`.
    pub kind: String,
    pub name: String,
    pub hash: String,
}

/// What a content key holds on a reference.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Content {
    IcebergTable {
        id: String,
        metadata_location: String,
        snapshot_id: i64,
        schema_id: i64,
        spec_id: i64,
    },
    IcebergView {
        id: String,
        metadata_location: String,
        version_id: i64,
    },
    Namespace {
        id: String,
    },
    /// Another content type (`DELTA_LAKE_TABLE`, `UDF`, …), by its type name.
    Other {
        kind: String,
    },
}

/// One key whose content differs between two references.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiffEntry {
    pub key: Vec<String>,
    pub from: Option<Content>,
    pub to: Option<Content>,
}

/// The outcome of a merge (or of a dry run).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MergeOutcome {
    pub applied: bool,
    pub successful: bool,
    /// The target's head afterwards.
    pub target_hash: Option<String>,
    /// Keys changed on both sides since the common ancestor, with Nessie's conflict type.
    pub conflicts: Vec<(Vec<String>, String)>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NessieErrorKind {
    /// No connection, a timeout, or a 5xx.
    Unreachable,
    /// `REFERENCE_NOT_FOUND`, `CONTENT_NOT_FOUND`, 404.
    NotFound,
    /// `REFERENCE_ALREADY_EXISTS`.
    AlreadyExists,
    /// `REFERENCE_CONFLICT`: the expected hash is not the head any more.
    Conflict,
    /// 401/403.
    Unauthorized,
    /// Any other refusal or an answer that is not the protocol's.
    BadResponse,
}

#[derive(Clone, Debug)]
pub struct NessieError {
    pub kind: NessieErrorKind,
    /// Nessie's `errorCode` (`REFERENCE_NOT_FOUND`, …) when it sent one.
    pub code: Option<String>,
    pub message: String,
}

impl std::fmt::Display for NessieError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.code {
            Some(code) => write!(f, "{code}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for NessieError {}

/// A Nessie server's API v2.
#[derive(Clone, Debug)]
pub struct Nessie {
    http: Client,
    base: Url,
}

impl Nessie {
    /// `base` is the API root, e.g. `http://127.0.0.1:19120/api/v2`.
    pub fn new(base: Url, timeout: Duration) -> Result<Self, NessieError> {
        let http = Client::builder()
            .connect_timeout(timeout)
            .timeout(timeout)
            .user_agent(concat!("phlo-transform/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| {
                error(
                    NessieErrorKind::Unreachable,
                    None,
                    format!("HTTP client: {e}"),
                )
            })?;
        let mut base = base;
        if !base.path().ends_with('/') {
            base.set_path(&format!("{}/", base.path()));
        }
        Ok(Nessie { http, base })
    }

    /// The name of the default branch (`GET /config`); also proves the server answers.
    pub async fn default_branch(&self) -> Result<String, NessieError> {
        let config = self.call(Method::GET, &["config"], &[], None).await?;
        text(&config, "defaultBranch")
    }

    pub async fn references(&self) -> Result<Vec<Reference>, NessieError> {
        let body = self.call(Method::GET, &["trees"], &[], None).await?;
        body.get("references")
            .and_then(Value::as_array)
            .ok_or_else(|| bad("no `references` in the answer"))?
            .iter()
            .map(reference)
            .collect()
    }

    /// A reference by name (or `name@hash`, `-` for the default branch).
    pub async fn reference(&self, name: &str) -> Result<Reference, NessieError> {
        let body = self.call(Method::GET, &["trees", name], &[], None).await?;
        reference(body.get("reference").unwrap_or(&Value::Null))
    }

    /// Creates branch `name` at `from`'s hash.
    pub async fn create_branch(
        &self,
        name: &str,
        from: &Reference,
    ) -> Result<Reference, NessieError> {
        let body = self
            .call(
                Method::POST,
                &["trees"],
                &[("name", name), ("type", "BRANCH")],
                Some(reference_json(from)),
            )
            .await?;
        reference(body.get("reference").unwrap_or(&Value::Null))
    }

    /// Deletes a branch, if its head is still `branch.hash`.
    pub async fn delete_branch(&self, branch: &Reference) -> Result<(), NessieError> {
        let at = format!("{}@{}", branch.name, branch.hash);
        self.call(Method::DELETE, &["trees", &at], &[], None)
            .await?;
        Ok(())
    }

    /// Points `branch` (expected at `branch.hash`) at `hash`: a rollback, or a fast-forward.
    pub async fn reassign(&self, branch: &Reference, hash: &str) -> Result<Reference, NessieError> {
        let at = format!("{}@{}", branch.name, branch.hash);
        let body = self
            .call(
                Method::PUT,
                &["trees", &at],
                &[("type", "BRANCH")],
                Some(json!({"type": "DETACHED", "hash": hash})),
            )
            .await?;
        reference(body.get("reference").unwrap_or(&Value::Null))
    }

    /// What `key` (namespace levels then the table name) is on `reference`; `None` if absent.
    pub async fn content(
        &self,
        reference: &str,
        key: &[&str],
    ) -> Result<Option<Content>, NessieError> {
        let key = content_key(key);
        match self
            .call(
                Method::GET,
                &["trees", reference, "contents", &key],
                &[],
                None,
            )
            .await
        {
            Ok(body) => content(body.get("content").unwrap_or(&Value::Null)).map(Some),
            Err(e)
                if e.kind == NessieErrorKind::NotFound
                    && e.code.as_deref() == Some("CONTENT_NOT_FOUND") =>
            {
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// Merges `from` (at its hash) into `into` (expected at its hash). With `dry_run` nothing
    /// changes and the outcome says whether it would apply.
    pub async fn merge(
        &self,
        from: &Reference,
        into: &Reference,
        dry_run: bool,
    ) -> Result<MergeOutcome, NessieError> {
        let at = format!("{}@{}", into.name, into.hash);
        let body = self
            .call(
                Method::POST,
                &["trees", &at, "history", "merge"],
                &[],
                Some(json!({
                    "fromRefName": from.name,
                    "fromHash": from.hash,
                    "dryRun": dry_run,
                    "returnConflictAsResult": true,
                })),
            )
            .await?;
        let conflicts = body
            .get("details")
            .and_then(Value::as_array)
            .map(|details| {
                details
                    .iter()
                    .filter_map(|d| {
                        let kind = d
                            .get("conflict")?
                            .get("conflictType")
                            .and_then(Value::as_str)?;
                        Some((key_elements(d.get("key")?), kind.to_owned()))
                    })
                    .collect()
            })
            .unwrap_or_default();
        Ok(MergeOutcome {
            applied: body
                .get("wasApplied")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            successful: body
                .get("wasSuccessful")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            target_hash: body
                .get("resultantTargetHash")
                .and_then(Value::as_str)
                .map(str::to_owned),
            conflicts,
        })
    }

    /// Keys whose content differs between two references (environment comparison).
    pub async fn diff(&self, from: &str, to: &str) -> Result<Vec<DiffEntry>, NessieError> {
        let mut entries = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let mut query = Vec::new();
            if let Some(t) = &token {
                query.push(("page-token", t.as_str()));
            }
            let body = self
                .call(Method::GET, &["trees", from, "diff", to], &query, None)
                .await?;
            for d in body
                .get("diffs")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let side = |name: &str| match d.get(name) {
                    None | Some(Value::Null) => Ok(None),
                    Some(c) => content(c).map(Some),
                };
                entries.push(DiffEntry {
                    key: key_elements(d.get("key").unwrap_or(&Value::Null)),
                    from: side("from")?,
                    to: side("to")?,
                });
            }
            token = body.get("token").and_then(Value::as_str).map(str::to_owned);
            if !body
                .get("hasMore")
                .and_then(Value::as_bool)
                .unwrap_or(false)
                || token.is_none()
            {
                return Ok(entries);
            }
        }
    }

    async fn call(
        &self,
        method: Method,
        segments: &[&str],
        query: &[(&str, &str)],
        body: Option<Value>,
    ) -> Result<Value, NessieError> {
        let mut url = self.base.clone();
        url.path_segments_mut()
            .map_err(|_| bad(format!("{} cannot be a base URL", self.base)))?
            .pop_if_empty()
            .extend(segments);
        if !query.is_empty() {
            url.query_pairs_mut().extend_pairs(query);
        }
        let mut request = self.http.request(method, url.clone());
        if let Some(body) = body {
            request = request
                .header("Content-Type", "application/json")
                .body(body.to_string());
        }
        let response = request.send().await.map_err(|e| {
            error(
                NessieErrorKind::Unreachable,
                None,
                format!("{url}: {}", root_cause(&e)),
            )
        })?;
        let status = response.status();
        let bytes = response
            .bytes()
            .await
            .map_err(|e| error(NessieErrorKind::Unreachable, None, format!("{url}: {e}")))?;
        if status.is_success() {
            if bytes.is_empty() {
                return Ok(Value::Null);
            }
            return serde_json::from_slice(&bytes)
                .map_err(|e| bad(format!("{url}: not JSON ({e})")));
        }
        let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        let code = body
            .get("errorCode")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let message = body
            .get("message")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .unwrap_or_else(|| format!("HTTP {status} from {url}"));
        let kind = match (code.as_deref(), status) {
            (Some("REFERENCE_NOT_FOUND" | "CONTENT_NOT_FOUND"), _) | (_, StatusCode::NOT_FOUND) => {
                NessieErrorKind::NotFound
            }
            (Some("REFERENCE_ALREADY_EXISTS"), _) => NessieErrorKind::AlreadyExists,
            (Some("REFERENCE_CONFLICT"), _) | (_, StatusCode::CONFLICT) => {
                NessieErrorKind::Conflict
            }
            (_, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN) => NessieErrorKind::Unauthorized,
            (_, s) if s.is_server_error() => NessieErrorKind::Unreachable,
            _ => NessieErrorKind::BadResponse,
        };
        Err(error(kind, code, message))
    }
}

/// A content key in a URL path: elements joined by `.`, a `.` inside an element written
/// as the unit separator (Nessie's escaping).
fn content_key(elements: &[&str]) -> String {
    elements
        .iter()
        .map(|e| e.replace('.', "\u{1F}"))
        .collect::<Vec<_>>()
        .join(".")
}

fn reference(value: &Value) -> Result<Reference, NessieError> {
    Ok(Reference {
        kind: text(value, "type")?,
        name: text(value, "name")?,
        hash: value
            .get("hash")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
    })
}

fn reference_json(reference: &Reference) -> Value {
    json!({"type": reference.kind, "name": reference.name, "hash": reference.hash})
}

fn content(value: &Value) -> Result<Content, NessieError> {
    let kind = text(value, "type")?;
    let id = value
        .get("id")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let int = |key: &str| value.get(key).and_then(Value::as_i64).unwrap_or(-1);
    Ok(match kind.as_str() {
        "ICEBERG_TABLE" => Content::IcebergTable {
            id,
            metadata_location: text(value, "metadataLocation")?,
            snapshot_id: int("snapshotId"),
            schema_id: int("schemaId"),
            spec_id: int("specId"),
        },
        "ICEBERG_VIEW" => Content::IcebergView {
            id,
            metadata_location: text(value, "metadataLocation")?,
            version_id: int("versionId"),
        },
        "NAMESPACE" => Content::Namespace { id },
        _ => Content::Other { kind },
    })
}

fn key_elements(key: &Value) -> Vec<String> {
    key.get("elements")
        .and_then(Value::as_array)
        .map(|e| {
            e.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

fn text(value: &Value, key: &str) -> Result<String, NessieError> {
    value
        .get(key)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| bad(format!("no `{key}` in {}", value)))
}

fn root_cause(e: &reqwest::Error) -> String {
    let mut cause: &dyn std::error::Error = e;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}

fn error(kind: NessieErrorKind, code: Option<String>, message: impl Into<String>) -> NessieError {
    NessieError {
        kind,
        code,
        message: message.into(),
    }
}

fn bad(message: impl Into<String>) -> NessieError {
    error(NessieErrorKind::BadResponse, None, message)
}
