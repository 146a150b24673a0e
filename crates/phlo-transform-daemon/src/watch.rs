//! Keeps the live compilation in step with the disk: every `interval` the files the
//! workspace is made of are fingerprinted, as `watch` polls them
//! (`phlo_transform_exec::watch::watched`: the workspace and sources in files outside it), and
//! a change reloads the workspace.

use crate::context::Context;
use phlo_transform_project::fingerprint::Watched;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Reloads the live workspace whenever the fingerprint changes, until `stop` is set.
pub fn spawn(
    cx: Arc<Context>,
    interval: Duration,
    stop: Arc<AtomicBool>,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name("phlo-daemon-watch".into())
        .spawn(move || {
            let mut watched = watched(&cx);
            let mut seen = watched.fingerprint();
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(interval);
                let now = watched.fingerprint();
                if now != seen {
                    reload(&cx);
                    // Taken before the reload, so a change during it reloads again; unless
                    // the reload reads other sources outside the workspace: a new baseline.
                    let following = self::watched(&cx);
                    seen = if following == watched {
                        now
                    } else {
                        following.fingerprint()
                    };
                    watched = following;
                }
            }
        })
}

fn watched(cx: &Context) -> Watched {
    let published = cx.live.snapshot();
    let files = &cx.files;
    phlo_transform_exec::watch::watched(&published.compilation, &files.warehouse, &files.artifacts)
}

fn reload(cx: &Context) {
    let published = cx.live.reload();
    if let Some(d) = &published.fatal {
        eprintln!("warning: the workspace cannot be compiled: {}", d.message);
    }
}
