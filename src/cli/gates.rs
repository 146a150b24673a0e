//! `phlo-transform gates [<model>]` (SPEC §84): compile, read the tests' newest results,
//! render `phlo_transform_exec::gates`.

use phlo_transform_exec::gates;

use super::render::{fatal, Output};
use super::{compile, open_state_read_only, Paths, EXIT_OK};

pub async fn gates(paths: &Paths, model: Option<&str>, json: bool) -> u8 {
    let c = match compile(paths) {
        Ok(c) => c,
        Err(d) => return fatal(d, json),
    };
    let mut out = Output::new(json).with_workspace(&c.workspace);
    out.diagnostics(c.diagnostics.iter().cloned());
    let store = match open_state_read_only(paths).await {
        Ok(s) => s,
        Err(d) => return out.fail(vec![d]),
    };
    match gates::gates(c, store.as_ref(), model).await {
        Ok(report) => {
            out.report(&report);
            EXIT_OK
        }
        Err(d) => out.fail(vec![d]),
    }
}
