//! `docs`: the generated site over testdata/cli after a `run` — files, a model page's columns,
//! lineage diagram and history, HTML escaping, the refusal of a foreign folder — and the same
//! pages opened in a real headless Chromium (Debian's `chromium`, which scripts/test.sh
//! installs): the DOM after the scripts ran shows the columns, the diagram, the history and
//! the search results of `index.html?q=orders`. Screenshots go under the test's output.
//! `docs --serve` over loopback HTTP.

mod common;

use common::{run, workspace, write_file};
use std::path::{Path, PathBuf};
use std::process::Command;

/// testdata/cli with a description holding markup, run once, its site written.
fn site() -> (tempfile::TempDir, PathBuf) {
    let ws = workspace("cli");
    let toml = std::fs::read_to_string(ws.path().join("phlo.toml")).unwrap();
    write_file(
        ws.path(),
        "phlo.toml",
        &format!("{toml}\n[model.\"shop.daily\"]\ndescription = \"Totals <b>per</b> day & more\"\n\n[model.\"shop.daily\".columns.total]\ndescription = \"Sum of <amount>\"\n"),
    );
    let ran = run(ws.path(), &["run"]);
    assert_eq!(ran.code, 0, "run: {}\n{}", ran.stdout, ran.stderr);
    let out = run(ws.path(), &["docs", "--json"]);
    assert_eq!(out.code, 0, "docs: {}\n{}", out.stdout, out.stderr);
    let json = out.json();
    assert_eq!(json["models"], 3, "{json}");
    assert_eq!(json["sources"], 1, "{json}");
    let dir = ws.path().join(".phlo/transform/docs");
    (ws, dir)
}

fn read(dir: &Path, rel: &str) -> String {
    std::fs::read_to_string(dir.join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

#[test]
fn the_site_holds_every_page_with_schema_lineage_and_history() {
    let (ws, dir) = site();
    for rel in [
        "index.html",
        "graph.html",
        "search-index.js",
        "graph-data.js",
        "assets/style.css",
        "assets/search.js",
        "assets/graph.js",
        "models/shop.daily.html",
        "models/shop.orders_clean.html",
        "models/shop.orders_log.html",
        "sources/shop.orders.html",
    ] {
        assert!(dir.join(rel).is_file(), "{rel} is missing");
    }
    let daily = read(&dir, "models/shop.daily.html");
    for wanted in [
        "<td><code>total</code></td><td><code>Int64</code></td><td>yes</td><td>Sum of &lt;amount&gt;</td>",
        "<td><code>n</code></td><td><code>Int64</code></td><td>no</td>",
        // The lineage diagram names the upstream column and links its model.
        "<a href=\"../models/shop.orders_clean.html\"><g class=\"input\">",
        ">shop.orders_clean.amount</text>",
        // History: the run, passed.
        "<td>run</td><td class=\"status passed\">passed</td>",
        // The test with its last result.
        "<td>daily_positive</td><td class=\"status passed\">",
        "<span class=\"kw\">select</span>",
        // Escaped everywhere.
        "Totals &lt;b&gt;per&lt;/b&gt; day &amp; more",
        "Sum of &lt;amount&gt;",
    ] {
        assert!(daily.contains(wanted), "models/shop.daily.html lacks {wanted:?}:\n{daily}");
    }
    assert!(
        !daily.contains("<b>per</b>"),
        "unescaped description:\n{daily}"
    );
    assert!(read(&dir, "search-index.js").starts_with("window.PHLO_SEARCH = ["));
    assert!(read(&dir, "graph-data.js").starts_with("window.PHLO_GRAPH = {"));

    // The same workspace and state give the same bytes.
    let before = read(&dir, "models/shop.daily.html") + &read(&dir, "index.html");
    let again = run(ws.path(), &["docs"]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert_eq!(
        before,
        read(&dir, "models/shop.daily.html") + &read(&dir, "index.html")
    );

    // A folder that is not a site is never overwritten.
    let foreign = ws.path().join("mine");
    write_file(&foreign, "notes.txt", "keep me");
    let refused = run(
        ws.path(),
        &["docs", "--out", foreign.to_str().unwrap(), "--json"],
    );
    assert_eq!(refused.code, 2, "{}\n{}", refused.stdout, refused.stderr);
    assert_eq!(
        refused.json()["diagnostics"][0]["code"],
        "W001",
        "{}",
        refused.stdout
    );
    assert_eq!(read(&foreign, "notes.txt"), "keep me");
}

#[test]
fn a_workspace_never_run_says_so() {
    let ws = workspace("cli");
    let site = ws.path().join("site");
    let out = run(ws.path(), &["docs", "--out", site.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let page = read(&site, "models/shop.daily.html");
    assert!(page.contains("Never run."), "{page}");
}

/// `docs --serve`: the site written, then served read-only on loopback: the index and a model
/// page as written, nothing outside the folder.
#[test]
fn docs_serve_serves_the_site_and_nothing_else() {
    use std::io::{BufRead, BufReader, Read, Write};
    let ws = workspace("cli");
    let mut child = Command::new(common::bin())
        .args(["-C", ws.path().to_str().unwrap(), "docs", "--serve"])
        .args(["--listen", "127.0.0.1:0"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let addr = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|l| l.split_once(" on http://").map(|(_, a)| a.to_string()))
        .expect("docs --serve says where it listens");
    let get = |path: &str| {
        let mut stream = std::net::TcpStream::connect(&addr).unwrap();
        write!(stream, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        let (head, body) = response.split_once("\r\n\r\n").unwrap();
        let status: u16 = head.split(' ').nth(1).unwrap().parse().unwrap();
        (status, head.to_string(), body.to_string())
    };
    let dir = ws.path().join(".phlo/transform/docs");
    let (status, head, body) = get("/");
    assert_eq!(status, 200, "{head}");
    assert!(head.contains("text/html"), "{head}");
    assert_eq!(body, read(&dir, "index.html"));
    let (status, _, body) = get("/models/shop.daily.html");
    assert_eq!((status, body), (200, read(&dir, "models/shop.daily.html")));
    assert_eq!(get("/../../phlo.toml").0, 404);
    assert_eq!(get("/models/..%2F..%2F..%2Fphlo.toml").0, 404);
    let _ = child.kill();
    let _ = child.wait();
}

/// Debian's Chromium, or a failure that says how to install it.
fn chromium() -> &'static str {
    let found = Command::new("chromium").arg("--version").output();
    match found {
        Ok(o) if o.status.success() => "chromium",
        _ => panic!("chromium is not installed: run scripts/test.sh --setup-only (it installs Debian's chromium)"),
    }
}

fn headless(url: &str, extra: &[&str]) -> String {
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new(chromium())
        .args([
            "--headless",
            "--disable-gpu",
            "--no-sandbox",
            "--no-first-run",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(extra)
        .arg(url)
        .output()
        .expect("chromium runs");
    assert!(
        out.status.success(),
        "chromium {url}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn shots() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("docs_site");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn the_site_works_in_a_headless_browser() {
    let (_ws, dir) = site();
    let url = |rel: &str| format!("file://{}/{rel}", dir.display());
    let dom = headless(&url("models/shop.daily.html"), &["--dump-dom"]);
    for wanted in [
        "<code>total</code>",
        "<svg class=\"lineage\"",
        "shop.orders_clean.amount",
        "class=\"history\"",
        "passed",
    ] {
        assert!(
            dom.contains(wanted),
            "the model page's DOM lacks {wanted:?}:\n{dom}"
        );
    }
    let dom = headless(&url("index.html?q=orders"), &["--dump-dom"]);
    let results = dom
        .split("<ul id=\"results\">")
        .nth(1)
        .and_then(|r| r.split("</ul>").next())
        .unwrap_or_else(|| panic!("no results list:\n{dom}"));
    assert!(
        results.contains(">shop.orders_clean</a>") && results.contains(">shop.orders</a>"),
        "search for `orders` lists neither model nor source: {results}"
    );
    assert!(
        !results.contains(">shop.daily</a>"),
        "search for `orders` lists shop.daily: {results}"
    );
    let dom = headless(
        &url("graph.html?focus=shop.daily&up=1&down=0"),
        &["--dump-dom"],
    );
    assert!(
        dom.contains("data-drawn=\"2\"") && dom.contains("data-name=\"shop.orders_clean\""),
        "the graph focused on shop.daily one hop up draws it and shop.orders_clean:\n{dom}"
    );
    let shots = shots();
    for (page, name) in [
        ("models/shop.daily.html", "model.png"),
        ("index.html?q=orders", "search.png"),
        ("graph.html?focus=shop.daily", "graph.png"),
    ] {
        let file = shots.join(name);
        headless(
            &url(page),
            &[
                &format!("--screenshot={}", file.display()),
                "--window-size=1280,1000",
            ],
        );
        assert!(file.is_file(), "no screenshot of {page}");
    }
}
