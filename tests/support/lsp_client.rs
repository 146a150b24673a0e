//! A language client for tests and benches: JSON-RPC with `Content-Length` framing over the
//! server's stdin/stdout, every message read on a thread of its own.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::Duration;

/// A language client: requests with increasing ids, every message the server sends read on
/// a thread of its own.
pub struct Client {
    pub child: Child,
    stdin: ChildStdin,
    incoming: Receiver<Value>,
    next_id: i64,
    /// Notifications received while waiting for responses, in order.
    pub notifications: Vec<Value>,
}

impl Client {
    pub fn start(bin: &Path, root: &Path) -> Client {
        let mut child = Command::new(bin)
            .arg("-C")
            .arg(root)
            .arg("lsp")
            .env_remove("PHLO_STATE_URL")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the binary starts");
        let stdin = child.stdin.take().unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let (tx, incoming) = channel();
        std::thread::spawn(move || loop {
            let mut length = None;
            loop {
                let mut line = String::new();
                if stdout.read_line(&mut line).unwrap_or(0) == 0 {
                    return;
                }
                let line = line.trim_end();
                if line.is_empty() {
                    break;
                }
                if let Some(n) = line.strip_prefix("Content-Length: ") {
                    length = n.parse::<usize>().ok();
                }
            }
            let mut body = vec![0; length.expect("a Content-Length header")];
            stdout.read_exact(&mut body).unwrap();
            if tx.send(serde_json::from_slice(&body).unwrap()).is_err() {
                return;
            }
        });
        Client {
            child,
            stdin,
            incoming,
            next_id: 1,
            notifications: Vec::new(),
        }
    }

    pub fn send(&mut self, message: Value) {
        let body = message.to_string();
        write!(self.stdin, "Content-Length: {}\r\n\r\n{body}", body.len()).unwrap();
        self.stdin.flush().unwrap();
    }

    pub fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    pub fn receive(&mut self) -> Value {
        self.incoming
            .recv_timeout(Duration::from_secs(60))
            .expect("the server answers within a minute")
    }

    /// The result of `method`, the notifications sent before it kept.
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let message = self.receive();
            if message.get("id") == Some(&json!(id)) {
                return message;
            }
            self.notifications.push(message);
        }
    }

    /// The next diagnostics published for `uri` (waiting for them when not received yet).
    pub fn diagnostics_for(&mut self, uri: &str) -> Value {
        let is_for = |m: &Value| {
            m["method"] == "textDocument/publishDiagnostics" && m["params"]["uri"] == uri
        };
        if let Some(i) = self.notifications.iter().position(is_for) {
            return self.notifications.remove(i)["params"]["diagnostics"].clone();
        }
        loop {
            let message = self.receive();
            if is_for(&message) {
                return message["params"]["diagnostics"].clone();
            }
            self.notifications.push(message);
        }
    }
}
