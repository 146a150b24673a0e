//! `explain <model>` (SPEC §80): the per-model companion to `plan`; parse, call
//! `phlo_transform_exec::explain`, render.

use phlo_transform_exec::explain as explanation;

use super::commands::fatal;
use super::render::Output;
use super::{compile, Paths, EXIT_OK};

pub async fn explain(paths: &Paths, name: &str, json: bool) -> u8 {
    let c = match compile(paths) {
        Ok(c) => c,
        Err(d) => return fatal(d, json),
    };
    let i = match c.resolve_model(name) {
        Ok(i) => i,
        Err(d) => return fatal(d, json),
    };
    let mut out = Output::new(json).with_workspace(&c.workspace);
    out.diagnostics(c.diagnostics.iter().cloned());
    if c.has_errors() {
        return out.fail([]);
    }
    let explained =
        explanation::explain_in(c, i, &paths.target(), &mut |w| out.diagnostics(w)).await;
    match explained {
        Ok(e) => {
            out.report(&e);
            EXIT_OK
        }
        Err(diags) => out.fail(diags),
    }
}
