//! HTTP in and out: a `tiny_http` request decoded into a [`Call`] (method, decoded path
//! segments, query, the two headers the API reads, the body), and a [`Reply`] written back as
//! JSON. Nothing here knows a route.

use crate::api_error::ApiError;
use std::collections::BTreeMap;
use std::io::Read;

/// The largest request body read; an operation's submission is a few hundred bytes.
const MAX_BODY: u64 = 1 << 20;

/// One decoded request.
pub struct Call {
    pub method: String,
    /// The path's segments, percent-decoded (`/v1/models/a.b` → `["v1", "models", "a.b"]`).
    pub path: Vec<String>,
    pub query: BTreeMap<String, Vec<String>>,
    /// `Authorization: Bearer <token>`'s token.
    pub bearer: Option<String>,
    pub idempotency_key: Option<String>,
    pub body: Vec<u8>,
}

impl Call {
    /// Decodes `request`, its body read up to [`MAX_BODY`] (API003 beyond).
    pub fn read(request: &mut tiny_http::Request) -> Result<Call, ApiError> {
        let url = request.url().to_string();
        let (path, query) = url.split_once('?').unwrap_or((&url, ""));
        let path = path
            .split('/')
            .filter(|s| !s.is_empty())
            .map(|s| {
                percent_encoding::percent_decode_str(s)
                    .decode_utf8_lossy()
                    .into_owned()
            })
            .collect();
        let mut parsed: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (k, v) in form_urlencoded::parse(query.as_bytes()) {
            parsed
                .entry(k.into_owned())
                .or_default()
                .push(v.into_owned());
        }
        let header = |name: &'static str| {
            request
                .headers()
                .iter()
                .find(|h| h.field.equiv(name))
                .map(|h| h.value.as_str().trim().to_string())
        };
        let bearer = header("Authorization")
            .and_then(|v| v.strip_prefix("Bearer ").map(|t| t.trim().to_string()));
        let idempotency_key = header("Idempotency-Key").filter(|k| !k.is_empty());
        let method = request.method().as_str().to_ascii_uppercase();
        let mut body = Vec::new();
        request
            .as_reader()
            .take(MAX_BODY + 1)
            .read_to_end(&mut body)
            .map_err(|e| ApiError::bad_request(format!("the request body cannot be read: {e}")))?;
        if body.len() as u64 > MAX_BODY {
            return Err(ApiError::bad_request(format!(
                "the request body is larger than {MAX_BODY} bytes"
            )));
        }
        Ok(Call {
            method,
            path,
            query: parsed,
            bearer,
            idempotency_key,
            body,
        })
    }

    /// A `GET` read asked for by another front end (the MCP server) with `query`.
    pub fn get(query: impl IntoIterator<Item = (String, String)>) -> Call {
        let mut parsed: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (k, v) in query {
            parsed.entry(k).or_default().push(v);
        }
        Call {
            method: "GET".into(),
            path: Vec::new(),
            query: parsed,
            bearer: None,
            idempotency_key: None,
            body: Vec::new(),
        }
    }

    /// The query parameter `name` (its last value).
    pub fn param(&self, name: &str) -> Option<&str> {
        self.query
            .get(name)
            .and_then(|v| v.last())
            .map(String::as_str)
    }

    /// Every value of `name`, comma-separated values split (`select=a,b&select=c`).
    pub fn list(&self, name: &str) -> Vec<String> {
        self.query
            .get(name)
            .into_iter()
            .flatten()
            .flat_map(|v| v.split(','))
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_string)
            .collect()
    }

    /// `name` as a whole number (API003 when it is not one).
    pub fn number(&self, name: &str, default: i64) -> Result<i64, ApiError> {
        match self.param(name) {
            None => Ok(default),
            Some(v) => v
                .parse()
                .map_err(|_| ApiError::bad_request(format!("`{name}` is not a number: {v:?}"))),
        }
    }

    /// `name` as a flag: absent or `false`/`0` is false, `true`/`1`/empty is true.
    pub fn flag(&self, name: &str) -> Result<bool, ApiError> {
        match self.param(name) {
            None | Some("false") | Some("0") => Ok(false),
            Some("") | Some("true") | Some("1") => Ok(true),
            Some(v) => Err(ApiError::bad_request(format!(
                "`{name}` is true or false, not {v:?}"
            ))),
        }
    }
}

/// A JSON response.
pub struct Reply {
    pub status: u16,
    pub body: String,
}

impl Reply {
    pub fn json(status: u16, value: &impl serde::Serialize) -> Reply {
        Reply {
            status,
            body: serde_json::to_string(value).expect("responses serialise"),
        }
    }

    pub fn error(e: &ApiError) -> Reply {
        Reply::json(e.status, &e.body())
    }

    /// Writes the reply to `request`; a client that went away is not the daemon's error.
    pub fn send(self, request: tiny_http::Request) {
        let content_type = tiny_http::Header::from_bytes("Content-Type", "application/json")
            .expect("a valid header");
        let response = tiny_http::Response::from_string(self.body)
            .with_status_code(self.status)
            .with_header(content_type);
        let _ = request.respond(response);
    }
}
