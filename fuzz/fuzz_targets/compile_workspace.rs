//! The `compile_workspace` target; its body is `phlo_transform_fuzz::compile_workspace` (fuzz/src/lib.rs), which
//! `tests/fuzz_regressions.rs` also replays on every input in `fuzz/regressions/compile_workspace/`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| phlo_transform_fuzz::compile_workspace(data));
