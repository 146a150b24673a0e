//! The `directives` target; its body is `phlo_transform_fuzz::directives` (fuzz/src/lib.rs), which
//! `tests/fuzz_regressions.rs` also replays on every input in `fuzz/regressions/directives/`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| phlo_transform_fuzz::directives(data));
