//! Delivery. `emit` only serialises the event and puts it on a bounded queue per transport;
//! a tokio task per transport drains it (HTTP POST to the collector, or a line appended to a
//! JSON Lines file). A collector that is down or slow therefore never holds a run up: events
//! that do not fit the queue are dropped, an event is tried three times at most, and at exit
//! `finish` waits for the queues at most the configured timeout in total.

use crate::config::{redact_url, OpenLineageConfig};
use serde_json::Value;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// Events waiting per transport. A run emits two per model plus two: this holds a run of a
/// few thousand models before dropping.
const QUEUE: usize = 8192;
const TRIES: u32 = 3;
const BACKOFF: Duration = Duration::from_millis(200);

pub struct Emitter {
    queues: Vec<mpsc::Sender<Arc<str>>>,
    workers: Vec<JoinHandle<()>>,
    drain: Duration,
    dropped: AtomicBool,
}

impl Emitter {
    /// Starts the transports `config` enables; `None` when it enables none. Must be called
    /// inside a tokio runtime.
    pub fn start(config: &OpenLineageConfig) -> Option<Emitter> {
        let mut emitter = Emitter {
            queues: Vec::new(),
            workers: Vec::new(),
            drain: config.timeout,
            dropped: AtomicBool::new(false),
        };
        if let Some(url) = config.endpoint_url() {
            match reqwest::Client::builder().timeout(config.timeout).build() {
                Ok(client) => {
                    let http = Http {
                        client,
                        shown: redact_url(&url),
                        url: request_url(&url, config.api_key.is_some()),
                        api_key: config.api_key.clone(),
                    };
                    emitter.spawn(|rx| http.run(rx));
                }
                Err(e) => eprintln!(
                    "warning: OpenLineage: cannot create the HTTP client, events are not sent: {}",
                    e.without_url()
                ),
            }
        }
        if let Some(path) = config.file.clone() {
            emitter.spawn(|rx| append_lines(path, rx));
        }
        (!emitter.queues.is_empty()).then_some(emitter)
    }

    fn spawn<F>(&mut self, worker: impl FnOnce(mpsc::Receiver<Arc<str>>) -> F)
    where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        let (tx, rx) = mpsc::channel(QUEUE);
        self.queues.push(tx);
        self.workers.push(tokio::spawn(worker(rx)));
    }

    /// Queues `event` on every transport; never waits. No secret leaves in an event.
    pub fn emit(&self, event: &Value) {
        let body: Arc<str> = phlo_transform_core::secrets::scrub(
            &serde_json::to_string(event).expect("events serialise"),
        )
        .into();
        for q in &self.queues {
            if let Err(mpsc::error::TrySendError::Full(_)) = q.try_send(body.clone()) {
                if !self.dropped.swap(true, Ordering::Relaxed) {
                    eprintln!("warning: OpenLineage: the event queue is full; events are dropped");
                }
            }
        }
    }

    /// Closes the queues and waits for what is in them, at most the configured timeout in
    /// total; whatever is left then is dropped.
    pub async fn finish(self) {
        drop(self.queues);
        let deadline = tokio::time::Instant::now() + self.drain;
        for mut worker in self.workers {
            if tokio::time::timeout_at(deadline, &mut worker)
                .await
                .is_err()
            {
                worker.abort();
                eprintln!(
                    "warning: OpenLineage: events still undelivered after {}s were dropped",
                    self.drain.as_secs()
                );
            }
        }
    }
}

/// The URL events are posted to. With an API key, userinfo in the URL is removed: reqwest
/// would turn it into a Basic `Authorization` header sent before the key's Bearer one, so
/// the collector would never see the key.
fn request_url(url: &str, has_api_key: bool) -> String {
    match url::Url::parse(url) {
        Ok(mut u) if has_api_key && (!u.username().is_empty() || u.password().is_some()) => {
            let _ = u.set_username("");
            let _ = u.set_password(None);
            u.to_string()
        }
        _ => url.to_string(),
    }
}

struct Http {
    client: reqwest::Client,
    url: String,
    /// `url` without userinfo, for messages.
    shown: String,
    api_key: Option<String>,
}

impl Http {
    async fn run(self, mut rx: mpsc::Receiver<Arc<str>>) {
        // After an event could not be delivered, later ones get one try until one gets
        // through: a collector that is down costs one attempt per event, not three.
        let mut down = false;
        while let Some(body) = rx.recv().await {
            let tries = if down { 1 } else { TRIES };
            match self.send(&body, tries).await {
                Ok(()) => down = false,
                Err(reason) => {
                    if !down {
                        eprintln!(
                            "warning: OpenLineage: cannot deliver events to {}: {reason}",
                            self.shown
                        );
                    }
                    down = true;
                }
            }
        }
    }

    async fn send(&self, body: &Arc<str>, tries: u32) -> Result<(), String> {
        let mut reason = String::new();
        for attempt in 0..tries {
            if attempt > 0 {
                tokio::time::sleep(BACKOFF * attempt).await;
            }
            let mut request = self
                .client
                .post(&self.url)
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(body.to_string());
            if let Some(key) = &self.api_key {
                request = request.bearer_auth(key);
            }
            match request.send().await {
                Ok(r) if r.status().is_success() => return Ok(()),
                Ok(r) => reason = format!("HTTP {}", r.status()),
                // Without the URL: it may carry userinfo.
                Err(e) => reason = e.without_url().to_string(),
            }
        }
        Err(reason)
    }
}

/// The JSON Lines transport: one event per line, appended.
async fn append_lines(path: PathBuf, mut rx: mpsc::Receiver<Arc<str>>) {
    if let Some(dir) = path.parent() {
        let _ = tokio::fs::create_dir_all(dir).await;
    }
    let opened = tokio::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .await;
    let mut file = match opened {
        Ok(f) => f,
        Err(e) => {
            eprintln!(
                "warning: OpenLineage: cannot open {}: {e}; events are not written",
                path.display()
            );
            return;
        }
    };
    while let Some(body) = rx.recv().await {
        let line = format!("{body}\n");
        if let Err(e) = file.write_all(line.as_bytes()).await {
            eprintln!("warning: OpenLineage: cannot write {}: {e}", path.display());
            return;
        }
    }
    let _ = file.flush().await;
}
