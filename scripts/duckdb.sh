#!/usr/bin/env bash
# Fetches the prebuilt libduckdb.so once (from the npm package @duckdb/node-bindings-linux-x64,
# which ships it standalone with the C API) into ~/.cache/phlo-transform/duckdb/<version>/ and
# prints that directory. Never builds DuckDB's C++ (the duckdb crate's `bundled` feature).
# Called by scripts/test.sh, it also hands DUCKDB_LIB_DIR and LD_LIBRARY_PATH to the tests
# through $PHLO_TEST_ENV. The version matches the duckdb crate pinned in
# crates/phlo-transform-adapter/Cargo.toml (=1.10506.1, DuckDB 1.5.6).
#
#   export DUCKDB_LIB_DIR=$(scripts/duckdb.sh)
#   export LD_LIBRARY_PATH=$DUCKDB_LIB_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
#   cargo test --features duckdb --test duckdb_adapter
set -euo pipefail

VERSION="${PHLO_DUCKDB_NPM_VERSION:-1.5.6-r.1}"
CACHE="${PHLO_DUCKDB_CACHE:-$HOME/.cache/phlo-transform/duckdb}"
DIR="$CACHE/$VERSION"

hand_over() {
    if [ -n "${PHLO_TEST_ENV:-}" ]; then
        {
            echo "DUCKDB_LIB_DIR=$DIR"
            echo "LD_LIBRARY_PATH=$DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
        } >>"$PHLO_TEST_ENV"
    fi
    echo "$DIR"
}

if [ -f "$DIR/libduckdb.so" ]; then
    hand_over
    exit 0
fi
command -v npm >/dev/null || { echo "scripts/duckdb.sh: npm is needed to fetch libduckdb" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent "@duckdb/node-bindings-linux-x64@$VERSION" >/dev/null)
tar -xzf "$work"/*.tgz -C "$work"
lib="$(find "$work/package" -name 'libduckdb.so' | head -n 1)"
[ -n "$lib" ] || { echo "scripts/duckdb.sh: no libduckdb.so in the npm package" >&2; exit 1; }
mkdir -p "$DIR.partial"
cp "$lib" "$DIR.partial/libduckdb.so"
rm -rf "$DIR"
mv "$DIR.partial" "$DIR"
hand_over
