//! `phlo-transform daemon` on a generated workspace, through the real binary over loopback
//! HTTP: start to `listening on`, `inspect` (`GET /v1/models/<model>`) latency under 50
//! concurrent clients, resident memory, and 1,000 malformed requests (bad JSON, a body over
//! the limit, unknown routes and methods, bad parameters, bytes that are not HTTP) answered
//! without the daemon going down.
//!
//! ```text
//! cargo build --release && cargo bench --bench daemon       # realistic shape, N = 1,000 and 10,000
//! PHLO_BENCH_SIZES=10000 PHLO_BENCH_SECONDS=30 cargo bench --bench daemon
//! ```
//!
//! Under `cargo test --benches` it runs a quick smoke test on 200 models.
//! See docs/performance.md for the figures.

#[path = "../tests/support/daemon_process.rs"]
mod daemon_process;
#[path = "support/generate.rs"]
#[allow(dead_code)]
mod generate;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_phlo-transform");
/// Concurrent clients of the latency run.
const CLIENTS: usize = 50;
/// Malformed requests sent.
const MALFORMED: usize = 1_000;

fn main() {
    if std::env::var_os("PHLO_BENCH_SHAPE").is_none() {
        std::env::set_var("PHLO_BENCH_SHAPE", "realistic");
    }
    let (bench, sizes) = generate::bench_sizes();
    let seconds: u64 = std::env::var("PHLO_BENCH_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(if bench { 30 } else { 2 });
    for n in sizes {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        generate::generate(&root, n).unwrap();
        let figures = measure(&root, Duration::from_secs(seconds));
        if bench {
            println!("daemon bench, {n} models:");
            for (name, value) in &figures {
                println!("  {name:<52} {value}");
            }
        } else {
            println!(
                "daemon bench smoke test: {n} models, {} figures",
                figures.len()
            );
        }
    }
}

/// Sends `request` as written; the status, or `None` when the daemon closed the connection
/// without an answer.
fn send(addr: &str, request: &[u8]) -> Option<u16> {
    let mut stream = TcpStream::connect(addr).expect("the daemon accepts connections");
    stream.set_read_timeout(Some(Duration::from_secs(60))).ok();
    // A peer that stops reading an oversized body may reset the connection mid-write.
    let _ = stream.write_all(request);
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    let head = String::from_utf8_lossy(&response);
    head.split(' ').nth(1).and_then(|s| s.parse().ok())
}

/// `GET path` as HTTP/1.0, so that a large answer is not chunked.
fn get(addr: &str, path: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, body.to_string())
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

/// `VmRSS` (now) or `VmHWM` (peak) of `pid`.
fn memory(pid: u32, field: &str) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .map(|l| l[field.len()..].trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into())
}

/// `CLIENTS` threads reading `path` for `duration`, each request on its own connection;
/// every latency, sorted.
fn latencies(addr: &str, path: &str, duration: Duration) -> Vec<Duration> {
    let threads: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let (addr, path) = (addr.to_string(), path.to_string());
            std::thread::spawn(move || {
                let mut seen = Vec::new();
                let until = Instant::now() + duration;
                while Instant::now() < until {
                    let started = Instant::now();
                    let (status, body) = get(&addr, &path);
                    assert_eq!(status, 200, "{path}: {body}");
                    seen.push(started.elapsed());
                }
                seen
            })
        })
        .collect();
    let mut all: Vec<Duration> = threads
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    all.sort();
    all
}

/// Request `i` of the malformed set.
fn malformed(i: usize, addr: &str) -> Vec<u8> {
    let post = |body: &str| {
        format!(
            "POST /v1/operations HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .into_bytes()
    };
    match i % 7 {
        0 => post("{\"kind\": \"run\""),
        1 => post("{\"kind\": \"explode\"}"),
        2 => post(&"x".repeat(2 << 20)),
        3 => format!("GET /v1/nothing/{i} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n")
            .into_bytes(),
        4 => format!("DELETE /v1/check HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n")
            .into_bytes(),
        5 => format!(
            "GET /v1/state/runs?limit=many HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
        )
        .into_bytes(),
        _ => b"\x16\x03\x01 not http at all\r\n\r\n".to_vec(),
    }
}

fn measure(root: &Path, duration: Duration) -> Vec<(&'static str, String)> {
    let mut figures = Vec::new();
    let started = Instant::now();
    let daemon = daemon_process::DaemonProcess::start(Path::new(BIN), root, &[]);
    figures.push((
        "start → listening (cold compile in memory)",
        ms(started.elapsed()),
    ));
    let pid = daemon.child.id();
    figures.push(("resident memory after start", memory(pid, "VmRSS:")));

    let (status, models) = get(&daemon.addr, "/v1/models");
    assert_eq!(status, 200, "{models}");
    let models: serde_json::Value = serde_json::from_str(&models).unwrap_or_else(|e| {
        panic!(
            "/v1/models is not JSON ({e}): {}",
            &models[..models.len().min(300)]
        )
    });
    let list = models["models"].as_array().unwrap();
    let model = list[list.len() / 2]["name"].as_str().unwrap().to_string();
    let path = format!("/v1/models/{model}");

    let seen = latencies(&daemon.addr, &path, duration);
    let at = |q: usize| seen[(seen.len() * q / 100).min(seen.len() - 1)];
    figures.push(("inspect requests answered", seen.len().to_string()));
    figures.push((
        "inspect throughput",
        format!("{:.0} req/s", seen.len() as f64 / duration.as_secs_f64()),
    ));
    figures.push(("inspect p50 (50 clients)", ms(at(50))));
    figures.push(("inspect p99 (50 clients)", ms(at(99))));
    figures.push(("inspect max (50 clients)", ms(*seen.last().unwrap())));

    let (mut client_errors, mut closed, mut other) = (0, 0, Vec::new());
    for i in 0..MALFORMED {
        match send(&daemon.addr, &malformed(i, &daemon.addr)) {
            Some(400..=499) => client_errors += 1,
            None => closed += 1,
            Some(status) => other.push((i % 7, status)),
        }
    }
    assert!(
        other.is_empty(),
        "malformed requests not answered 4xx: {other:?}"
    );
    let (status, body) = get(&daemon.addr, "/status");
    assert_eq!(
        status, 200,
        "the daemon is down after malformed requests: {body}"
    );
    figures.push((
        "malformed requests: 4xx / closed unanswered",
        format!("{client_errors} / {closed} of {MALFORMED}, /status still 200"),
    ));
    figures.push(("resident memory (peak)", memory(pid, "VmHWM:")));
    figures
}
