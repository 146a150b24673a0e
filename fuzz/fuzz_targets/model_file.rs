//! The `model_file` target; its body is `phlo_transform_fuzz::model_file` (fuzz/src/lib.rs), which
//! `tests/fuzz_regressions.rs` also replays on every input in `fuzz/regressions/model_file/`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| phlo_transform_fuzz::model_file(data));
