#!/usr/bin/env bash
# Bounded coverage-guided fuzzing of the inputs a user controls (issue 10): model files,
# directives, phlo.toml/transform.toml and selectors. Builds fuzz/ with cargo-fuzz on the
# nightly toolchain and runs each target for a fixed time; any crash fails the script and
# leaves its input in fuzz/artifacts/<target>/.
#
#   scripts/fuzz.sh            # 60 s per target (what .ci/run runs after the tests)
#   scripts/fuzz.sh 900        # 15 min per target (the by-hand run recorded in docs/hardening.md)
#   scripts/fuzz.sh 60 config  # one target
#
# New interesting inputs go to a scratch corpus, not into the checked-in fuzz/corpus/.
set -euo pipefail

seconds="${1:-60}"
shift || true
targets=("$@")
if [ "${#targets[@]}" -eq 0 ]; then
    targets=(directives config selectors model_file compile_workspace)
fi

repo="$(cd "$(dirname "$0")/.." && pwd)"
cd "$repo"
export CARGO_TARGET_DIR="${FUZZ_TARGET_DIR:-$HOME/.cache/phlo-transform/fuzz-target}"
# libFuzzer's instrumentation needs a nightly compiler; both it and cargo-fuzz live under
# $HOME (~/.rustup, ~/.cargo/bin), so a machine with a cached home installs them once.
if ! cargo +nightly --version >/dev/null 2>&1; then
    echo "== installing the nightly toolchain (rustup)"
    rustup toolchain install nightly --profile minimal
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    echo "== installing cargo-fuzz"
    cargo install cargo-fuzz --locked
fi
echo "== $(rustc +nightly --version), $(cargo +nightly fuzz --version), target dir $CARGO_TARGET_DIR"

# Panics are what we look for: no sanitizer (safe Rust), optimised build, debug assertions on.
build=(--sanitizer none -O --debug-assertions)
cargo +nightly fuzz build "${build[@]}"

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
status=0
for t in "${targets[@]}"; do
    mkdir -p "$scratch/$t" "fuzz/artifacts/$t"
    echo "== fuzz $t for ${seconds}s"
    if ! cargo +nightly fuzz run "${build[@]}" "$t" "$scratch/$t" "fuzz/corpus/$t" -- \
        -max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096 -max_len=8192 \
        -print_final_stats=1 2>"$scratch/$t.log"; then
        status=1
        echo "!! $t crashed; input saved in fuzz/artifacts/$t/ (add it to fuzz/regressions/$t/)"
        tail -n 60 "$scratch/$t.log"
    fi
    grep -E "^(stat::number_of_executed_units|stat::new_units_added|Done|==[0-9]+== ERROR|thread .* panicked)" "$scratch/$t.log" || true
    tail -n 3 "$scratch/$t.log"
done
exit "$status"
