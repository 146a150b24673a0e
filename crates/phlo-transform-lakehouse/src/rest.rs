//! The two calls of the Iceberg REST catalog protocol that loading a table takes:
//!
//! - `GET {base}/v1/config[?warehouse=…]` → `{"defaults": {…}, "overrides": {…}}`; a `prefix`
//!   there (overrides win over defaults) goes between `v1` and every resource path;
//! - `GET {base}/v1/{prefix}/namespaces/{namespace}/tables/{table}` → a LoadTableResult
//!   `{"metadata-location", "metadata", "config"}`, the namespace's levels joined by the unit
//!   separator (0x1F, `%1F` in the URL).
//!
//! Failures come as `{"error": {"message", "type", "code"}}`. Every request carries the bearer
//! token when there is one, and every message is scrubbed of it.

use futures::future::join_all;
use phlo_transform_core::secrets::redact_url;
use reqwest::header::ACCEPT;
use reqwest::{Client, StatusCode};
use serde_json::Value;
use std::path::PathBuf;
use std::time::Duration;
use url::Url;

/// How long one request may take, connecting included: an unreachable catalog must not hold
/// up `check` for long.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// One table to load.
#[derive(Clone, Debug)]
pub struct TableRequest {
    /// The catalog's base URL, possibly with a path (`https://host/api/catalog`).
    pub catalog: String,
    pub namespace: Vec<String>,
    pub table: String,
    /// Sent as `?warehouse=` to `/v1/config`.
    pub warehouse: Option<String>,
    /// Sent as `Authorization: Bearer …`.
    pub token: Option<String>,
}

/// What the catalog answered for a table.
#[derive(Clone, Debug)]
pub struct LoadedTable {
    /// The table's current metadata.json, as a URI or path (absent for staged tables).
    pub metadata_location: Option<String>,
    /// The table metadata itself (`format-version`, `schemas`, `current-schema-id`, …).
    pub metadata: Value,
}

/// Why a table could not be loaded, in the terms a fix is chosen by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailureKind {
    /// No connection, a server error (5xx), or a base URL that is not one.
    Unreachable,
    /// No answer within [`REQUEST_TIMEOUT`].
    Timeout,
    /// 401, 403 or 419: a missing, wrong or expired token.
    Unauthorized,
    /// 404: no such namespace or table.
    NotFound,
    /// An answer that is not the protocol's: not JSON, a missing field, another status.
    BadResponse,
}

impl LoadedTable {
    /// The metadata file on this machine, when the location is a `file:` URI or a plain path
    /// (not an object-store URI such as `s3://…`).
    pub fn local_metadata(&self) -> Option<PathBuf> {
        let location = self.metadata_location.as_deref()?;
        match Url::parse(location) {
            Ok(url) if url.scheme() == "file" => url.to_file_path().ok(),
            // A Windows drive letter parses as a one-letter scheme.
            Ok(url) if url.scheme().len() > 1 => None,
            _ => Some(PathBuf::from(location)),
        }
    }
}

#[derive(Clone, Debug)]
pub struct RestError {
    pub kind: FailureKind,
    pub message: String,
}

impl RestError {
    fn new(kind: FailureKind, message: impl Into<String>) -> Self {
        RestError {
            kind,
            message: message.into(),
        }
    }
}

/// Loads every table, concurrently, each within `timeout` per request. Results are in the
/// order of `requests`.
///
/// The catalog snapshot is read synchronously, also from inside the CLI's async runtime where
/// blocking on that runtime is not allowed; so the requests run on a thread of their own with a
/// current-thread runtime, which works the same from any caller.
pub fn load_tables(
    requests: &[TableRequest],
    timeout: Duration,
) -> Vec<Result<LoadedTable, RestError>> {
    if requests.is_empty() {
        return Vec::new();
    }
    std::thread::scope(|scope| {
        let worker = scope.spawn(|| {
            let setup = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| e.to_string())
                .and_then(|runtime| {
                    Client::builder()
                        .timeout(timeout)
                        .connect_timeout(timeout)
                        .user_agent(concat!("phlo-transform/", env!("CARGO_PKG_VERSION")))
                        .build()
                        .map(|client| (runtime, client))
                        .map_err(|e| e.to_string())
                });
            match setup {
                Ok((runtime, client)) => runtime.block_on(join_all(
                    requests.iter().map(|r| load_table(&client, r, timeout)),
                )),
                Err(e) => requests
                    .iter()
                    .map(|_| {
                        Err(RestError::new(
                            FailureKind::Unreachable,
                            format!("cannot start an HTTP client: {e}"),
                        ))
                    })
                    .collect(),
            }
        });
        worker
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

async fn load_table(
    client: &Client,
    request: &TableRequest,
    timeout: Duration,
) -> Result<LoadedTable, RestError> {
    let base = base_url(&request.catalog)?;
    let token = request.token.as_deref();
    let config = get_json(
        client,
        config_url(&base, request.warehouse.as_deref()),
        token,
        timeout,
    )
    .await?;
    let prefix = config_prefix(&config).map_err(|e| RestError::new(FailureKind::BadResponse, e))?;
    let url = table_url(&base, prefix.as_deref(), &request.namespace, &request.table);
    let shown = redact_url(url.as_str());
    let result = get_json(client, url, token, timeout).await?;
    let metadata = result
        .get("metadata")
        .filter(|m| m.is_object())
        .cloned()
        .ok_or_else(|| {
            RestError::new(
                FailureKind::BadResponse,
                format!("GET {shown}: the answer has no `metadata` object (not a LoadTableResult)"),
            )
        })?;
    Ok(LoadedTable {
        metadata_location: result
            .get("metadata-location")
            .and_then(Value::as_str)
            .map(str::to_string),
        metadata,
    })
}

fn base_url(catalog: &str) -> Result<Url, RestError> {
    let invalid = |why: String| {
        RestError::new(
            FailureKind::Unreachable,
            format!(
                "`{}` is not an http(s) base URL: {why}",
                redact_url(catalog)
            ),
        )
    };
    let url = Url::parse(catalog).map_err(|e| invalid(e.to_string()))?;
    if !matches!(url.scheme(), "http" | "https") || url.cannot_be_a_base() {
        return Err(invalid(format!("unsupported scheme `{}`", url.scheme())));
    }
    Ok(url)
}

/// `{base}/v1/{segments…}`, each segment percent-encoded (the base's own path kept).
fn endpoint<'a>(base: &Url, segments: impl IntoIterator<Item = &'a str>) -> Url {
    let mut url = base.clone();
    url.set_query(None);
    url.path_segments_mut()
        .expect("checked by base_url")
        .pop_if_empty()
        .push("v1")
        .extend(segments);
    url
}

fn config_url(base: &Url, warehouse: Option<&str>) -> Url {
    let mut url = endpoint(base, ["config"]);
    if let Some(w) = warehouse {
        url.query_pairs_mut().append_pair("warehouse", w);
    }
    url
}

fn table_url(base: &Url, prefix: Option<&str>, namespace: &[String], table: &str) -> Url {
    let namespace = namespace.join("\u{1f}");
    let prefix = prefix.into_iter().flat_map(|p| p.split('/'));
    endpoint(
        base,
        prefix
            .filter(|s| !s.is_empty())
            .chain(["namespaces", &namespace, "tables", table]),
    )
}

/// The `prefix` of a CatalogConfig; `overrides` win over `defaults`.
fn config_prefix(config: &Value) -> Result<Option<String>, String> {
    if !config.is_object() {
        return Err("the /v1/config answer is not a CatalogConfig object".into());
    }
    Ok(["overrides", "defaults"]
        .iter()
        .find_map(|k| config.get(k)?.get("prefix")?.as_str())
        .filter(|p| !p.is_empty())
        .map(str::to_string))
}

async fn get_json(
    client: &Client,
    url: Url,
    token: Option<&str>,
    timeout: Duration,
) -> Result<Value, RestError> {
    let shown = redact_url(url.as_str());
    let mut request = client.get(url).header(ACCEPT, "application/json");
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let answer = async {
        let response = request.send().await?;
        let status = response.status();
        Ok::<_, reqwest::Error>((status, response.bytes().await?))
    }
    .await;
    let result = match answer {
        Err(e) => Err(transport_error(&e, timeout)),
        Ok((status, body)) if !status.is_success() => Err(status_error(status, &body)),
        Ok((_, body)) => serde_json::from_slice(&body).map_err(|e| {
            RestError::new(
                FailureKind::BadResponse,
                format!("the answer is not JSON ({e})"),
            )
        }),
    };
    result.map_err(|e| {
        RestError::new(
            e.kind,
            redact(&format!("GET {shown}: {}", e.message), token),
        )
    })
}

fn transport_error(e: &reqwest::Error, timeout: Duration) -> RestError {
    if e.is_timeout() {
        return RestError::new(
            FailureKind::Timeout,
            format!("no answer within {} s", timeout.as_secs_f32()),
        );
    }
    // reqwest's own text repeats the URL; the innermost cause says what happened.
    let mut cause: &dyn std::error::Error = e;
    while let Some(inner) = cause.source() {
        cause = inner;
    }
    let what = if e.is_connect() {
        "cannot connect"
    } else {
        "the request failed"
    };
    RestError::new(FailureKind::Unreachable, format!("{what}: {cause}"))
}

/// A non-2xx answer, described by its Iceberg error body when it has one.
fn status_error(status: StatusCode, body: &[u8]) -> RestError {
    let kind = match status.as_u16() {
        401 | 403 | 419 => FailureKind::Unauthorized,
        404 => FailureKind::NotFound,
        500..=599 => FailureKind::Unreachable,
        _ => FailureKind::BadResponse,
    };
    let error = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| v.get("error").cloned());
    let field = |name: &str| {
        error
            .as_ref()
            .and_then(|e| e.get(name))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let detail = match (field("type"), field("message")) {
        (Some(t), Some(m)) => format!("{t}: {m} "),
        (None, Some(m)) => format!("{m} "),
        (Some(t), None) => format!("{t} "),
        (None, None) => String::new(),
    };
    RestError::new(kind, format!("{detail}(HTTP {status})"))
}

/// A server may echo what it was sent; the token (and any credential in a URL) never
/// reaches a message.
fn redact(text: &str, token: Option<&str>) -> String {
    if let Some(t) = token {
        phlo_transform_core::secrets::register(t);
    }
    phlo_transform_core::secrets::scrub(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn urls_follow_the_protocol() {
        let base = base_url("http://cat:8181/api/catalog/").unwrap();
        assert_eq!(
            config_url(&base, Some("lab wh")).as_str(),
            "http://cat:8181/api/catalog/v1/config?warehouse=lab+wh"
        );
        let ns = ["lims".to_string(), "raw".to_string()];
        assert_eq!(
            table_url(&base, Some("ws/1"), &ns, "samples").as_str(),
            "http://cat:8181/api/catalog/v1/ws/1/namespaces/lims%1Fraw/tables/samples"
        );
        let base = base_url("https://cat").unwrap();
        assert_eq!(
            table_url(&base, None, &ns[..1], "a b").as_str(),
            "https://cat/v1/namespaces/lims/tables/a%20b"
        );
        assert!(base_url("ftp://cat").is_err());
        assert!(base_url("cat:8181").is_err());
    }

    #[test]
    fn overrides_win_over_defaults() {
        let config = json!({"defaults": {"prefix": "d"}, "overrides": {"prefix": "o"}});
        assert_eq!(config_prefix(&config).unwrap().as_deref(), Some("o"));
        let config = json!({"defaults": {"prefix": "d"}, "overrides": {}});
        assert_eq!(config_prefix(&config).unwrap().as_deref(), Some("d"));
        assert_eq!(config_prefix(&json!({})).unwrap(), None);
        assert!(config_prefix(&json!([])).is_err());
    }

    #[test]
    fn error_bodies_are_read_and_classified() {
        let body = br#"{"error": {"message": "Table does not exist: lab.x", "type": "NoSuchTableException", "code": 404}}"#;
        let e = status_error(StatusCode::NOT_FOUND, body);
        assert_eq!(e.kind, FailureKind::NotFound);
        assert_eq!(
            e.message,
            "NoSuchTableException: Table does not exist: lab.x (HTTP 404 Not Found)"
        );
        let e = status_error(StatusCode::FORBIDDEN, b"<html>no</html>");
        assert_eq!(e.kind, FailureKind::Unauthorized);
        assert_eq!(e.message, "(HTTP 403 Forbidden)");
        assert_eq!(
            status_error(StatusCode::BAD_GATEWAY, b"").kind,
            FailureKind::Unreachable
        );
        assert_eq!(redact("bad token s3cr3t", Some("s3cr3t")), "bad token ***");
    }

    #[test]
    fn local_metadata_locations_are_paths() {
        let table = |location: &str| LoadedTable {
            metadata_location: Some(location.to_string()),
            metadata: json!({}),
        };
        assert_eq!(
            table("file:///lake/t/metadata/v1%20a.metadata.json").local_metadata(),
            Some(PathBuf::from("/lake/t/metadata/v1 a.metadata.json"))
        );
        assert_eq!(
            table("/lake/t/metadata/v1.metadata.json").local_metadata(),
            Some(PathBuf::from("/lake/t/metadata/v1.metadata.json"))
        );
        assert_eq!(table("s3://lake/t/v1.metadata.json").local_metadata(), None);
    }

    fn request(catalog: String) -> TableRequest {
        TableRequest {
            catalog,
            namespace: vec!["lab".into()],
            table: "t".into(),
            warehouse: None,
            token: Some("s3cr3t".into()),
        }
    }

    #[test]
    fn a_silent_catalog_times_out_and_a_closed_port_is_unreachable() {
        // Connections are accepted (by the kernel's backlog) but never answered.
        let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let closed_port = closed.local_addr().unwrap().port();
        drop(closed);
        let results = load_tables(
            &[
                request(format!("http://{}", silent.local_addr().unwrap())),
                request(format!("http://127.0.0.1:{closed_port}")),
            ],
            Duration::from_millis(300),
        );
        let errors: Vec<RestError> = results.into_iter().map(|r| r.unwrap_err()).collect();
        assert_eq!(errors[0].kind, FailureKind::Timeout, "{:?}", errors[0]);
        assert!(
            errors[0].message.ends_with("no answer within 0.3 s"),
            "{}",
            errors[0].message
        );
        assert_eq!(errors[1].kind, FailureKind::Unreachable, "{:?}", errors[1]);
        assert!(
            errors[1].message.contains("/v1/config: cannot connect"),
            "{}",
            errors[1].message
        );
    }
}
