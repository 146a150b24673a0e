//! `docs --serve`: the generated documentation site's folder served read-only over local
//! HTTP, so that a browser that blocks `file://` pages (or a colleague on the same machine)
//! can open it. Only files under the folder are served: a path that climbs out of it (`..`),
//! or names a folder, is 404.

use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;
use std::io::Write;
use std::path::{Component, Path, PathBuf};

/// Serves `dir` on `listen` until `shutdown` resolves. Prints `serving <dir> on
/// http://<addr>` on stdout once it accepts requests. Must be called outside the runtime's
/// async context (the command line calls it in `spawn_blocking`).
pub fn serve(
    dir: &Path,
    listen: &str,
    runtime: tokio::runtime::Handle,
    shutdown: impl std::future::Future<Output = ()>,
) -> Result<(), Diagnostic> {
    let server = std::sync::Arc::new(tiny_http::Server::http(listen).map_err(|e| {
        Diagnostic::error(
            codes::INVALID_CONFIG,
            format!("cannot listen on {listen}: {e}"),
        )
        .with_help("pass a free address with --listen (port 0 picks one)")
    })?);
    let root = dir.to_path_buf();
    let serving = server.clone();
    let thread = std::thread::Builder::new()
        .name("phlo-docs-http".into())
        .spawn(move || {
            while let Ok(request) = serving.recv() {
                answer(&root, request);
            }
        })
        .map_err(|e| {
            Diagnostic::error(codes::INVALID_CONFIG, format!("cannot start a thread: {e}"))
                .with_help("the machine is out of threads or memory")
        })?;
    if let Some(addr) = server.server_addr().to_ip() {
        println!("serving {} on http://{addr}", dir.display());
        let _ = std::io::stdout().flush();
    }
    runtime.block_on(shutdown);
    server.unblock();
    let _ = thread.join();
    Ok(())
}

fn answer(root: &Path, request: tiny_http::Request) {
    if !matches!(
        request.method(),
        tiny_http::Method::Get | tiny_http::Method::Head
    ) {
        let _ = request.respond(tiny_http::Response::empty(405));
        return;
    }
    let found = file_of(root, request.url()).and_then(|path| {
        let bytes = std::fs::read(&path).ok()?;
        Some((content_type(&path), bytes))
    });
    let _ = match found {
        Some((kind, bytes)) => {
            let header = tiny_http::Header::from_bytes("Content-Type", kind).expect("a header");
            request.respond(tiny_http::Response::from_data(bytes).with_header(header))
        }
        None => {
            request.respond(tiny_http::Response::from_string("not found").with_status_code(404))
        }
    };
}

/// The file `url` names under `root` (`/` is `index.html`); `None` for a path that leaves
/// `root` or is not a file.
fn file_of(root: &Path, url: &str) -> Option<PathBuf> {
    let path = url.split(['?', '#']).next().unwrap_or("");
    let path = percent_encoding::percent_decode_str(path)
        .decode_utf8()
        .ok()?;
    let mut file = root.to_path_buf();
    for component in Path::new(path.trim_start_matches('/')).components() {
        match component {
            Component::Normal(part) => file.push(part),
            Component::CurDir => {}
            _ => return None,
        }
    }
    if file.is_dir() {
        file.push("index.html");
    }
    file.is_file().then_some(file)
}

fn content_type(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()) {
        Some("html") => "text/html; charset=utf-8",
        Some("js") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("svg") => "image/svg+xml",
        Some("json") => "application/json",
        Some("png") => "image/png",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::file_of;

    #[test]
    fn only_files_under_the_folder_are_served() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("site");
        std::fs::create_dir_all(root.join("models")).unwrap();
        std::fs::write(root.join("index.html"), "i").unwrap();
        std::fs::write(root.join("models/a b.html"), "m").unwrap();
        std::fs::write(dir.path().join("secret"), "s").unwrap();
        assert_eq!(file_of(&root, "/"), Some(root.join("index.html")));
        assert_eq!(file_of(&root, "/?q=x"), Some(root.join("index.html")));
        assert_eq!(
            file_of(&root, "/models/a%20b.html"),
            Some(root.join("models/a b.html"))
        );
        assert_eq!(file_of(&root, "/../secret"), None);
        assert_eq!(file_of(&root, "/models/..%2F..%2Fsecret"), None);
        assert_eq!(file_of(&root, "/nothing.html"), None);
    }
}
