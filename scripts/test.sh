#!/usr/bin/env bash
# The README's test command. On a bare machine of the project's kind (Debian 12, root, Rust
# present, package registries reachable) it installs what the tests need, then runs the whole
# suite; on a prepared machine every install step finds its work done and costs a second.
#
#   scripts/test.sh                 # set up, then cargo test --workspace --lib --bins --tests
#                                   #   --features duckdb (the DuckDB adapter's tests included)
#   scripts/test.sh -p <crate> ...  # set up, then cargo test --locked --no-fail-fast <args>
#                                   #   (add --features duckdb where the selection has it)
#   scripts/test.sh --setup-only    # set up only
#
# Cargo runs with --no-fail-fast: a failing test binary does not stop the others, so one run
# reports every failure; the script exits non-zero if any test failed.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { echo "== $*"; }
die() { echo "error: $*" >&2; exit 1; }

# Debian package lists are refreshed once per run, and only when something must be installed.
apt_updated=
apt_install() {
    if [ -z "$apt_updated" ]; then
        apt-get update -qq
        apt_updated=1
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

# Cargo's target directory lives in a cache under $HOME (unless the caller chose one), so a
# second run rebuilds only what changed.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/phlo-transform/target}"

# --- Rust and a C compiler --------------------------------------------------------------------
command -v cargo >/dev/null 2>&1 || die "cargo is not installed (the machine's Rust toolchain is expected)"
# cc builds the bundled SQLite of the state store and the C parts of a few dependencies.
if ! command -v cc >/dev/null 2>&1; then
    log "installing a C compiler (gcc)"
    apt_install gcc libc6-dev
fi

# --- Python readers -----------------------------------------------------------------------------
# tests/lakehouse.rs and tests/python/ write and read Delta and Iceberg tables with these
# independent Python libraries; the versions are pinned so their output does not drift.
# duckdb: tests/fidelity.rs runs the same models on the real DuckDB engine.
PYTHON_READERS=("deltalake==1.6.6" "pyiceberg==0.12.0" "pyarrow==26.0.1" "duckdb==2.0.1")
python_readers_present() {
    python3 - "${PYTHON_READERS[@]}" <<'EOF'
import sys
from importlib.metadata import version, PackageNotFoundError
for pin in sys.argv[1:]:
    name, wanted = pin.split("==")
    try:
        if version(name) != wanted:
            sys.exit(1)
    except PackageNotFoundError:
        sys.exit(1)
import pyiceberg.catalog.sql  # the sql-sqlite extra: SQLAlchemy
EOF
}
command -v python3 >/dev/null 2>&1 || { log "installing python3"; apt_install python3 python3-pip; }
if ! python_readers_present 2>/dev/null; then
    log "installing the Python readers: ${PYTHON_READERS[*]}"
    python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore \
        "deltalake==1.6.6" "pyiceberg[sql-sqlite,pyarrow]==0.12.0" "pyarrow==26.0.1" \
        "duckdb==2.0.1"
fi

# A virtual environment under ~/.cache/phlo-transform with exactly the pinned packages;
# installed, or completed, when a pin is missing or at another version.
ensure_venv() {
    local venv="$1" what="$2"
    shift 2
    if [ -x "$venv/bin/python" ] && "$venv/bin/python" - "$@" 2>/dev/null <<'PINS'
import sys
from importlib.metadata import version, PackageNotFoundError
for pin in sys.argv[1:]:
    name, wanted = pin.split("==")
    try:
        if version(name) != wanted:
            sys.exit(1)
    except PackageNotFoundError:
        sys.exit(1)
PINS
    then
        return
    fi
    log "installing the $what environment: $*"
    python3 -m venv "$venv" 2>/dev/null || { apt_install python3-venv; python3 -m venv "$venv"; }
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$@"
}

# --- TPC generator ----------------------------------------------------------------------------------
# tests/self_consistency.rs generates TPC-H and TPC-DS data and queries with DuckDB's own
# `tpch`/`tpcds` extensions, published on PyPI only up to DuckDB 1.5.5: a separate environment,
# so the readers keep their duckdb. PHLO_TPC_PYTHON tells the test where its Python is.
TPC_GENERATOR=("duckdb==1.5.5" "duckdb-extension-tpch==1.5.5" "duckdb-extension-tpcds==1.5.5" "pyarrow==26.0.1")
TPC_VENV="$HOME/.cache/phlo-transform/tpcgen-venv"
export PHLO_TPC_PYTHON="$TPC_VENV/bin/python"
ensure_venv "$TPC_VENV" "TPC generator" "${TPC_GENERATOR[@]}"

# --- dbt ----------------------------------------------------------------------------------------------
# tests/dbt_artifacts.rs reads the dbt artifacts `run --artifacts dbt` writes with
# dbt-artifacts-parser and with dbt-core's own reader; tests/dbt_import.rs builds the dbt
# project it imports with dbt-duckdb and compares the rows. dbt-core 1.10 (its 1.12 downloads a
# parser wheel from outside PyPI while installing) pins its own libraries, so it gets an
# environment of its own; PHLO_DBT_PYTHON tells the tests where its Python is.
DBT_ENV=("dbt-core==1.10.23" "dbt-duckdb==1.10.1" "dbt-adapters==1.24.5" "dbt-common==1.39.0"
    "duckdb==2.0.1" "dbt-artifacts-parser==0.15.0" "pydantic==2.14.4")
DBT_VENV="$HOME/.cache/phlo-transform/dbt-venv"
export PHLO_DBT_PYTHON="$DBT_VENV/bin/python"
ensure_venv "$DBT_VENV" "dbt" "${DBT_ENV[@]}"

# tests/dbt_import.rs's second dbt project: SQLMesh's dbt version of its sushi example
# (examples/sushi_dbt, Apache-2.0), as the pinned sqlmesh source distribution on PyPI ships it
# (checked by its SHA-256), unpacked with that distribution's LICENSE; nothing of it is kept
# in this repository. PHLO_DBT_SUSHI tells the test where it is.
SQLMESH_SDIST="sqlmesh-0.236.4"
SQLMESH_SHA256="f018b5ca04ee30a9db4a7ab9413c0afdfac0332bf45a110d8a0a0fa22f93e691"
SUSHI_DIR="$HOME/.cache/phlo-transform/dbt-projects/$SQLMESH_SDIST/sushi_dbt"
export PHLO_DBT_SUSHI="$SUSHI_DIR"
if [ ! -f "$SUSHI_DIR/dbt_project.yml" ]; then
    log "unpacking examples/sushi_dbt of the $SQLMESH_SDIST source distribution"
    sdist_dir="$(mktemp -d)"
    "$DBT_VENV/bin/python" -m pip download --quiet --disable-pip-version-check --no-deps \
        --no-binary :all: -d "$sdist_dir" "${SQLMESH_SDIST/-/==}"
    echo "$SQLMESH_SHA256  $sdist_dir/$SQLMESH_SDIST.tar.gz" | sha256sum -c --quiet \
        || die "$SQLMESH_SDIST.tar.gz does not have the pinned SHA-256"
    tar -xzf "$sdist_dir/$SQLMESH_SDIST.tar.gz" -C "$sdist_dir" \
        "$SQLMESH_SDIST/examples/sushi_dbt" "$SQLMESH_SDIST/LICENSE"
    mkdir -p "$(dirname "$SUSHI_DIR")"
    cp "$sdist_dir/$SQLMESH_SDIST/LICENSE" "$sdist_dir/$SQLMESH_SDIST/examples/sushi_dbt/"
    rm -rf "$SUSHI_DIR"
    mv "$sdist_dir/$SQLMESH_SDIST/examples/sushi_dbt" "$SUSHI_DIR"
    rm -rf "$sdist_dir"
fi

# --- PostgreSQL -------------------------------------------------------------------------------------
# The state-store suite and tests/state.rs create a fresh database per test through
# PHLO_TEST_POSTGRES_URL (default postgres://postgres@127.0.0.1:5432/postgres, trust
# authentication). A test that cannot reach it fails, so it must answer before cargo runs.
PG_DEFAULT_URL="postgres://postgres@127.0.0.1:5432/postgres"
PG_URL="${PHLO_TEST_POSTGRES_URL:-$PG_DEFAULT_URL}"
PG_TRUST="host all all 127.0.0.1/32 trust"

# Answers a query without a password (psql -w never prompts).
pg_answers() { command -v psql >/dev/null 2>&1 && PGCONNECT_TIMEOUT=3 psql -w -Atq "$PG_URL" -c 'select 1' >/dev/null 2>&1; }
pg_wait() {
    for _ in $(seq 1 30); do pg_answers && return 0; sleep 1; done
    return 1
}
# Debian keeps each cluster's configuration in /etc/postgresql/<version>/<name>.
pg_clusters() { ls -d /etc/postgresql/*/*/ 2>/dev/null | sed 's:/$::' || true; }

# Loopback trust must be the FIRST rule of pg_hba.conf: PostgreSQL takes the first rule that
# matches, and Debian's default file asks for scram passwords over TCP. A machine where
# PostgreSQL was installed before this script ran has that default, so the rule is added (or
# moved to the top) whether or not this script installed the server. Prints the files changed.
pg_trust_loopback() {
    local cluster hba
    for cluster in $(pg_clusters); do
        hba="$cluster/pg_hba.conf"
        [ -f "$hba" ] || continue
        if [ "$(head -n 1 "$hba")" != "$PG_TRUST" ]; then
            grep -vxF "$PG_TRUST" "$hba" >"$hba.phlo-tmp" || true
            { echo "$PG_TRUST"; cat "$hba.phlo-tmp"; } >"$hba"
            rm -f "$hba.phlo-tmp"
            echo "$cluster"
        fi
    done
}

# Starts every cluster that is down and reloads the ones whose rules changed.
pg_start() {
    local cluster version name changed
    changed="$(pg_trust_loopback)"
    for cluster in $(pg_clusters); do
        version="$(basename "$(dirname "$cluster")")"
        name="$(basename "$cluster")"
        if pg_ctlcluster "$version" "$name" status >/dev/null 2>&1; then
            case "$changed" in *"$cluster"*) pg_ctlcluster "$version" "$name" reload ;; esac
        else
            pg_ctlcluster --skip-systemctl-redirect "$version" "$name" start
        fi
    done
    pg_wait
}

if [ "$PG_URL" != "$PG_DEFAULT_URL" ]; then
    # Someone else's server: nothing on this machine to install or start.
    pg_answers || die "PostgreSQL does not answer at PHLO_TEST_POSTGRES_URL ($PG_URL)"
elif ! pg_answers; then
    if ! command -v pg_ctlcluster >/dev/null 2>&1 || [ -z "$(pg_clusters)" ]; then
        log "installing PostgreSQL (Debian package)"
        apt_install postgresql
        if [ -z "$(pg_clusters)" ]; then
            pg_createcluster "$(ls /usr/lib/postgresql | sort -V | tail -n 1)" main >/dev/null
        fi
    fi
    # Installed but down, or up but asking for a password: trust loopback, start, reload.
    log "starting PostgreSQL with trust authentication on 127.0.0.1"
    pg_start || die "PostgreSQL could not be started at $PG_URL"
fi
log "PostgreSQL: $(psql -w -Atq "$PG_URL" -c 'show server_version')"

# --- Further engines and services ----------------------------------------------------------------
# Each engine or service a test needs has its own idempotent script, called here, one line
# each. A script that must hand variables to the tests (a library path, a port) appends
# NAME=value lines to the file named by $PHLO_TEST_ENV (as GitHub Actions' $GITHUB_ENV); they
# are exported before cargo runs.
PHLO_TEST_ENV="$(mktemp)"
export PHLO_TEST_ENV
setup_step() {
    log "setup: $1"
    bash "$@" || die "$1 failed"
}
# scripts/duckdb.sh fetches libduckdb with npm once; a machine without npm and without the
# cached library gets Debian's npm first.
if ! command -v npm >/dev/null 2>&1 && ! ls "$HOME"/.cache/phlo-transform/duckdb/*/libduckdb.so >/dev/null 2>&1; then
    log "installing npm (scripts/duckdb.sh fetches libduckdb from the npm registry)"
    apt_install npm
fi
# tests/docs_site.rs opens the generated documentation site in Debian's headless Chromium.
if ! command -v chromium >/dev/null 2>&1; then
    log "installing chromium (tests/docs_site.rs: the docs site in a headless browser)"
    apt_install chromium
fi
# >>> engine and service setup steps (add yours here) >>>
setup_step scripts/duckdb.sh        # prebuilt libduckdb for the DuckDB adapter (adapters)
setup_step scripts/services.sh up # Trino + Nessie for tests/trino*.rs (trino)
# <<< engine and service setup steps <<<
while IFS= read -r line; do
    [ -n "$line" ] && export "${line?}"
done <"$PHLO_TEST_ENV"
rm -f "$PHLO_TEST_ENV"
unset PHLO_TEST_ENV

if [ "${1:-}" = "--setup-only" ]; then
    log "setup done"
    exit 0
fi

# --- The tests -------------------------------------------------------------------------------------
log "$(rustc --version), $(cargo --version)"
log "$(python3 --version), target dir $CARGO_TARGET_DIR"
if [ "$#" -eq 0 ]; then
    # The DuckDB adapter links the libduckdb scripts/duckdb.sh handed over (DUCKDB_LIB_DIR to
    # build, LD_LIBRARY_PATH to run); the feature adds only DuckDB's own crates to the build
    # (tests/build_features.rs), so this one build also serves a plain `cargo run`'s dependencies.
    set -- --workspace --lib --bins --tests --features duckdb
fi
exec cargo test --locked --no-fail-fast "$@"
