//! A protocol-faithful Iceberg REST catalog for the tests (no real catalog runs here): plain
//! HTTP/1.1 over `std::net` on 127.0.0.1, one thread per connection, one request per
//! connection. It serves what the REST spec says a catalog serves for reading a table:
//!
//! - `GET {base}/v1/config[?warehouse=…]` → `{"defaults": {}, "overrides": {"prefix": …}}`;
//! - `GET {base}/v1/{prefix}/namespaces/{ns}/tables/{table}` (namespace levels joined by `%1F`)
//!   → a LoadTableResult `{"metadata-location", "metadata", "config"}` built from a real
//!   metadata.json (read at every request, so a new commit is seen), or `NoSuchTableException`
//!   (404) in the spec's error body `{"error": {"message", "type", "code"}}`;
//! - a wrong or missing bearer token → `NotAuthorizedException` (401), whose message echoes
//!   the credentials it was sent, as careless servers do, to prove the client never prints
//!   them.
//!
//! Every request is recorded (target and `Authorization` header) for the tests to inspect.

use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// What the catalog answers for one table.
#[derive(Clone)]
pub enum Table {
    /// The metadata.json at `file`, announced at `location` (its `file://` URI, or another).
    Metadata { file: PathBuf, location: String },
    /// 200 with a body that is not JSON.
    Garbled,
}

#[derive(Clone, Debug)]
pub struct Request {
    /// Path and query, as sent.
    pub target: String,
    pub authorization: Option<String>,
}

#[derive(Default)]
struct State {
    prefix: Option<String>,
    token: Option<String>,
    /// By `namespace.with.dots.table`.
    tables: BTreeMap<String, Table>,
    requests: Vec<Request>,
}

pub struct RestCatalog {
    /// The base URL to put in phlo.toml: `http://127.0.0.1:<port><base path>`.
    pub url: String,
    state: Arc<Mutex<State>>,
}

impl RestCatalog {
    /// Starts a catalog under `base_path` (`""` or `/api/catalog`) whose config announces
    /// `prefix` and which wants `token`, when given.
    pub fn start(base_path: &str, prefix: Option<&str>, token: Option<&str>) -> RestCatalog {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}{base_path}", listener.local_addr().unwrap());
        let state = Arc::new(Mutex::new(State {
            prefix: prefix.map(str::to_string),
            token: token.map(str::to_string),
            ..State::default()
        }));
        let shared = state.clone();
        let base_path = base_path.to_string();
        // Lives until the test process ends.
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let state = shared.clone();
                let base_path = base_path.clone();
                std::thread::spawn(move || serve(stream, &base_path, &state));
            }
        });
        RestCatalog { url, state }
    }

    /// Serves `table` (`ns.ns.table`) from then on.
    pub fn put(&self, table: &str, answer: Table) {
        self.state
            .lock()
            .unwrap()
            .tables
            .insert(table.to_string(), answer);
    }

    /// Serves `table` from the metadata.json pyiceberg reported (`file://…`).
    pub fn put_metadata(&self, table: &str, location: &str) {
        let file = PathBuf::from(location.strip_prefix("file://").unwrap_or(location));
        self.put(
            table,
            Table::Metadata {
                file,
                location: location.to_string(),
            },
        );
    }

    pub fn requests(&self) -> Vec<Request> {
        self.state.lock().unwrap().requests.clone()
    }
}

fn serve(mut stream: TcpStream, base_path: &str, state: &Mutex<State>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let mut parts = line.split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let mut authorization = None;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).unwrap_or(0) == 0 || header.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            if name.eq_ignore_ascii_case("authorization") {
                authorization = Some(value.trim().to_string());
            }
        }
    }
    let (status, body) = {
        let mut state = state.lock().unwrap();
        state.requests.push(Request {
            target: target.to_string(),
            authorization: authorization.clone(),
        });
        respond(&state, method, target, base_path, authorization.as_deref())
    };
    let reason = match status {
        200 => "OK",
        401 => "Unauthorized",
        404 => "Not Found",
        _ => "Bad Request",
    };
    let _ = write!(
        stream,
        "HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
}

fn error(code: u16, kind: &str, message: String) -> (u16, String) {
    let body = json!({"error": {"message": message, "type": kind, "code": code}});
    (code, body.to_string())
}

fn respond(
    state: &State,
    method: &str,
    target: &str,
    base_path: &str,
    authorization: Option<&str>,
) -> (u16, String) {
    if let Some(token) = &state.token {
        if authorization != Some(format!("Bearer {token}").as_str()) {
            return error(
                401,
                "NotAuthorizedException",
                format!(
                    "Not authorized: credentials `{}` rejected",
                    authorization.unwrap_or("none")
                ),
            );
        }
    }
    let path = target.split('?').next().unwrap_or("");
    let Some(rest) = path
        .strip_prefix(base_path)
        .and_then(|p| p.strip_prefix("/v1/"))
    else {
        return error(400, "BadRequestException", format!("no route {target}"));
    };
    if method != "GET" {
        return error(
            400,
            "BadRequestException",
            format!("{method} is not served"),
        );
    }
    if rest == "config" {
        let overrides = match &state.prefix {
            Some(p) => json!({"prefix": p}),
            None => json!({}),
        };
        return (
            200,
            json!({"defaults": {}, "overrides": overrides}).to_string(),
        );
    }
    let rest = match &state.prefix {
        Some(p) => rest.strip_prefix(&format!("{p}/")).unwrap_or(""),
        None => rest,
    };
    let segments: Vec<String> = rest.split('/').map(decode).collect();
    let ["namespaces", namespace, "tables", table] =
        segments.iter().map(String::as_str).collect::<Vec<_>>()[..]
    else {
        return error(400, "BadRequestException", format!("no route {target}"));
    };
    let name = format!("{}.{table}", namespace.replace('\u{1f}', "."));
    match state.tables.get(&name) {
        None => error(
            404,
            "NoSuchTableException",
            format!("Table does not exist: {name}"),
        ),
        Some(Table::Garbled) => (200, "<html>Welcome to nginx!</html>".to_string()),
        Some(Table::Metadata { file, location }) => {
            let metadata: Value =
                serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
            let result = json!({"metadata-location": location, "metadata": metadata, "config": {}});
            (200, result.to_string())
        }
    }
}

/// Percent-decoding of one path segment.
fn decode(segment: &str) -> String {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = segment
            .get(i + 1..i + 3)
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).unwrap()
}
