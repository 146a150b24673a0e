#!/usr/bin/env bash
# Real warehouse servers for the Trino adapter and its tests: a single-node Trino 476 and an
# in-memory Nessie, started from jars fetched once from Maven Central.
#
#   scripts/services.sh up     [trino] [nessie]   download (once), start, wait until ready
#   scripts/services.sh down   [trino] [nessie]   stop
#   scripts/services.sh status [trino] [nessie]   say what runs where (exit 1 if one is down)
#
# Without a service name the command applies to both. Environment overrides:
#   PHLO_TRINO_PORT (8080), PHLO_NESSIE_PORT (19120), PHLO_NESSIE_MANAGEMENT_PORT (19121),
#   PHLO_TRINO_HEAP (1536M), PHLO_NESSIE_HEAP (384M), PHLO_TRINO_JAVA (a Java 24+ `java`, for both servers),
#   PHLO_SERVICES_CACHE (~/.cache/phlo-transform: downloads and installs),
#   PHLO_SERVICES_DIR ($PHLO_SERVICES_CACHE/services: configuration, data, logs, pids),
#   PHLO_VIEWS_POSTGRES (postgres://postgres@127.0.0.1:5432) and PHLO_VIEWS_DATABASE
#   (phlo_trino_views): where the views catalog keeps its tables; see "Catalogs" below.
#
# Catalogs Trino serves:
#   iceberg  Iceberg tables, catalog on Nessie (branch main), data files on the local file system
#            under $PHLO_SERVICES_DIR/warehouse (Trino's `local:///` scheme).
#   views    Iceberg *views*: Trino's Nessie catalog cannot create views, so views live in a
#            second Iceberg catalog of type jdbc whose catalog tables are in the PostgreSQL
#            database `phlo_trino_views` (created here). It persists across restarts like the
#            view definitions of any warehouse; a view there reads `iceberg.<schema>.<table>`.
#   tpch     Trino's generated TPC-H data (tpch.tiny.lineitem, ...), a read-only source.
#   memory   Trino's memory connector, for scratch tables.
# Catalogs are dynamic (catalog.management=dynamic): `CREATE CATALOG` adds one while Trino runs.
# Environments use it for a candidate's branch-bound catalog (phlo_<ref>_<hash>: Iceberg on the
# candidate's Nessie branch; docs/environments.md). Such a catalog lasts until Trino restarts (this
# script rewrites the catalog directory); phlo-transform creates a missing one again.
# Nessie keeps its commits in memory: every start of Nessie is an empty catalog, so starting it
# also empties the warehouse directory and the views catalog (they would point at lost tables).
set -euo pipefail

TRINO_VERSION=476
NESSIE_VERSION=0.99.0
TRINO_PLUGINS=(iceberg memory tpch)

CACHE="${PHLO_SERVICES_CACHE:-$HOME/.cache/phlo-transform}"
DOWNLOADS="$CACHE/downloads"
RUN_DIR="${PHLO_SERVICES_DIR:-$CACHE/services}"
TRINO_PORT="${PHLO_TRINO_PORT:-8080}"
NESSIE_PORT="${PHLO_NESSIE_PORT:-19120}"
NESSIE_MANAGEMENT_PORT="${PHLO_NESSIE_MANAGEMENT_PORT:-19121}"
TRINO_HEAP="${PHLO_TRINO_HEAP:-1536M}"
NESSIE_HEAP="${PHLO_NESSIE_HEAP:-384M}"
VIEWS_POSTGRES="${PHLO_VIEWS_POSTGRES:-postgres://postgres@127.0.0.1:5432}"
VIEWS_DATABASE="${PHLO_VIEWS_DATABASE:-phlo_trino_views}"
READY_TIMEOUT="${PHLO_SERVICES_TIMEOUT:-240}"

say() { echo "services: $*" >&2; }
die() { say "error: $*"; exit 1; }

# --- downloads (once) -------------------------------------------------------------------------

# Debian packages the script itself uses (curl, unzip, psql, mvn), installed when missing.
need() { # <command> <debian package>
    command -v "$1" >/dev/null 2>&1 && return 0
    say "installing $2 (apt-get) for $1"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >/dev/null; } ||
        die "$1 is missing and $2 could not be installed"
}

# mvn dependency:copy of one artifact into $DOWNLOADS, unless it is there already.
fetch_artifact() { # <groupId:artifactId:version:type[:classifier]> <file name>
    local coords="$1" file="$2"
    [ -s "$DOWNLOADS/$file" ] && return 0
    need mvn maven
    mkdir -p "$DOWNLOADS"
    say "downloading $coords from Maven Central"
    mvn -B -Dstyle.color=never dependency:copy -Dartifact="$coords" -DoutputDirectory="$DOWNLOADS.partial" \
        -Dmdep.overWriteReleases=true >"$DOWNLOADS/maven.log" 2>&1 ||
        die "could not download $coords; Maven said:
$(tail -n 30 "$DOWNLOADS/maven.log")"
    mv "$DOWNLOADS.partial/$file" "$DOWNLOADS/$file"
}

# A Java that runs Trino 476 (24.0.1 or later); Nessie 0.99 (Java 21+) runs on it too.
modern_java() {
    local candidate
    for candidate in "${PHLO_TRINO_JAVA:-}" /usr/lib/jvm/temurin-25-jdk-amd64/bin/java \
        /usr/lib/jvm/temurin-24-jdk-amd64/bin/java "${JAVA_HOME:-/nonexistent}/bin/java" java; do
        [ -n "$candidate" ] && command -v "$candidate" >/dev/null 2>&1 || continue
        local major
        major=$("$candidate" -XshowSettings:properties -version 2>&1 |
            sed -n 's/^ *java.specification.version = \([0-9]*\).*/\1/p')
        if [ "${major:-0}" -ge 24 ]; then echo "$candidate"; return 0; fi
    done
    die "Trino $TRINO_VERSION needs Java 24 or later (tried /usr/lib/jvm/temurin-25-jdk-amd64; set PHLO_TRINO_JAVA)"
}

install_trino() {
    local home="$CACHE/trino-server-$TRINO_VERSION"
    if [ ! -f "$home/.complete" ]; then
        fetch_artifact "io.trino:trino-server-core:$TRINO_VERSION:tar.gz" "trino-server-core-$TRINO_VERSION.tar.gz"
        local plugin
        for plugin in "${TRINO_PLUGINS[@]}"; do
            fetch_artifact "io.trino:trino-$plugin:$TRINO_VERSION:zip" "trino-$plugin-$TRINO_VERSION.zip"
        done
        need unzip unzip
        say "installing Trino $TRINO_VERSION into $home"
        rm -rf "$home" "$home.partial" && mkdir -p "$home.partial"
        tar xzf "$DOWNLOADS/trino-server-core-$TRINO_VERSION.tar.gz" -C "$home.partial" --strip-components=1
        for plugin in "${TRINO_PLUGINS[@]}"; do
            unzip -q "$DOWNLOADS/trino-$plugin-$TRINO_VERSION.zip" -d "$home.partial/plugin"
            mv "$home.partial/plugin/trino-$plugin-$TRINO_VERSION" "$home.partial/plugin/$plugin"
        done
        touch "$home.partial/.complete"
        mv "$home.partial" "$home"
    fi
    echo "$home"
}

install_nessie() {
    local jar="nessie-quarkus-$NESSIE_VERSION-runner.jar"
    fetch_artifact "org.projectnessie.nessie:nessie-quarkus:$NESSIE_VERSION:jar:runner" "$jar"
    echo "$DOWNLOADS/$jar"
}

# --- processes --------------------------------------------------------------------------------

pid_of() { # <service>: the pid if its recorded process is alive
    local file="$RUN_DIR/$1.pid"
    [ -f "$file" ] || return 1
    local pid
    pid=$(cat "$file")
    kill -0 "$pid" 2>/dev/null && echo "$pid"
}

trino_ready() { curl -fsS "http://127.0.0.1:$TRINO_PORT/v1/info" 2>/dev/null | grep -q '"starting":false'; }
nessie_ready() { curl -fsS "http://127.0.0.1:$NESSIE_PORT/api/v2/config" 2>/dev/null | grep -q '"defaultBranch"'; }

wait_ready() { # <service>
    local service="$1" waited=0
    until "${service}_ready"; do
        pid_of "$service" >/dev/null ||
            die "$service exited while starting; last lines of $RUN_DIR/$service.log:
$(tail -n 30 "$RUN_DIR/$service.log" 2>/dev/null)"
        [ "$waited" -lt "$READY_TIMEOUT" ] || die "$service not ready after ${READY_TIMEOUT}s (log: $RUN_DIR/$service.log)"
        sleep 1
        waited=$((waited + 1))
    done
}

port_taken() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

start_nessie() {
    if pid_of nessie >/dev/null; then say "nessie already running (pid $(pid_of nessie))"; return 0; fi
    nessie_ready && die "port $NESSIE_PORT already serves a Nessie this script did not start"
    port_taken "$NESSIE_PORT" && die "port $NESSIE_PORT is taken (set PHLO_NESSIE_PORT)"
    local jar java
    jar=$(install_nessie)
    java=$(modern_java)
    # An empty Nessie: tables written against the previous one are unreachable now.
    rm -rf "$RUN_DIR/warehouse" && mkdir -p "$RUN_DIR/warehouse/iceberg" "$RUN_DIR/warehouse/views"
    reset_views_catalog
    say "starting Nessie $NESSIE_VERSION on $NESSIE_PORT"
    (
        cd "$RUN_DIR"
        exec setsid "$java" -Xmx"$NESSIE_HEAP" -XX:+UseSerialGC \
            -Dquarkus.http.port="$NESSIE_PORT" -Dquarkus.http.host=127.0.0.1 \
            -Dquarkus.management.port="$NESSIE_MANAGEMENT_PORT" -Dquarkus.management.host=127.0.0.1 \
            -Dnessie.version.store.type=IN_MEMORY \
            -Dquarkus.otel.sdk.disabled=true \
            -jar "$jar" >"$RUN_DIR/nessie.log" 2>&1 </dev/null
    ) &
    echo $! >"$RUN_DIR/nessie.pid"
    wait_ready nessie
}

# The views catalog's tables in PostgreSQL (Trino's jdbc catalog expects them to exist), empty.
reset_views_catalog() {
    need psql postgresql-client
    psql -q "$VIEWS_POSTGRES/postgres" -c "DROP DATABASE IF EXISTS $VIEWS_DATABASE WITH (FORCE)" \
        -c "CREATE DATABASE $VIEWS_DATABASE" >/dev/null ||
        die "PostgreSQL at $VIEWS_POSTGRES is needed for the views catalog"
    psql -q "$VIEWS_POSTGRES/$VIEWS_DATABASE" >/dev/null <<'SQL'
CREATE TABLE iceberg_namespace_properties (
    catalog_name VARCHAR(255) NOT NULL, namespace VARCHAR(255) NOT NULL,
    property_key VARCHAR(255), property_value VARCHAR(1000),
    PRIMARY KEY (catalog_name, namespace, property_key));
CREATE TABLE iceberg_tables (
    catalog_name VARCHAR(255) NOT NULL, table_namespace VARCHAR(255) NOT NULL,
    table_name VARCHAR(255) NOT NULL, metadata_location VARCHAR(1000),
    previous_metadata_location VARCHAR(1000), iceberg_type VARCHAR(5),
    PRIMARY KEY (catalog_name, table_namespace, table_name));
SQL
}

write_trino_config() {
    local etc="$RUN_DIR/trino-etc"
    rm -rf "$etc" && mkdir -p "$etc/catalog" "$RUN_DIR/trino-data"
    cat >"$etc/config.properties" <<EOF
coordinator=true
node-scheduler.include-coordinator=true
http-server.http.port=$TRINO_PORT
discovery.uri=http://127.0.0.1:$TRINO_PORT
catalog.management=dynamic
EOF
    cat >"$etc/node.properties" <<EOF
node.environment=phlo
node.id=phlo-single-node
node.data-dir=$RUN_DIR/trino-data
EOF
    cat >"$etc/catalog/iceberg.properties" <<EOF
connector.name=iceberg
iceberg.catalog.type=nessie
iceberg.nessie-catalog.uri=http://127.0.0.1:$NESSIE_PORT/api/v2
iceberg.nessie-catalog.ref=main
iceberg.nessie-catalog.default-warehouse-dir=local:///iceberg
fs.native-local.enabled=true
local.location=$RUN_DIR/warehouse
EOF
    local pg_host_port="${VIEWS_POSTGRES#postgres://}"
    local pg_user="${pg_host_port%%@*}"
    pg_host_port="${pg_host_port#*@}"
    cat >"$etc/catalog/views.properties" <<EOF
connector.name=iceberg
iceberg.catalog.type=jdbc
iceberg.jdbc-catalog.catalog-name=views
iceberg.jdbc-catalog.driver-class=org.postgresql.Driver
iceberg.jdbc-catalog.connection-url=jdbc:postgresql://$pg_host_port/$VIEWS_DATABASE
iceberg.jdbc-catalog.connection-user=$pg_user
iceberg.jdbc-catalog.connection-password=
iceberg.jdbc-catalog.default-warehouse-dir=local:///views
fs.native-local.enabled=true
local.location=$RUN_DIR/warehouse
EOF
    echo "connector.name=tpch" >"$etc/catalog/tpch.properties"
    printf 'connector.name=memory\nmemory.max-data-per-node=256MB\n' >"$etc/catalog/memory.properties"
}

start_trino() {
    if pid_of trino >/dev/null; then say "trino already running (pid $(pid_of trino))"; return 0; fi
    port_taken "$TRINO_PORT" && die "port $TRINO_PORT is taken (set PHLO_TRINO_PORT)"
    local home java
    home=$(install_trino)
    java=$(modern_java)
    write_trino_config
    say "starting Trino $TRINO_VERSION on $TRINO_PORT ($java)"
    (
        # Trino refuses to start with fewer than 4096 open files.
        ulimit -n 8192 2>/dev/null || ulimit -n 4096 || die "cannot raise the open-file limit to 4096 (Trino needs it)"
        cd "$home"
        # jvm.config of the Trino distribution minus -XX:GCLockerRetryAllocationCount, which
        # JDK 25 rejects; a modest heap because the machine is shared with compiles.
        exec setsid "$java" -cp "$home/lib/*" \
            -Xmx"$TRINO_HEAP" -XX:+UseG1GC -XX:G1HeapRegionSize=32M \
            -XX:+ExplicitGCInvokesConcurrent -XX:+ExitOnOutOfMemoryError -XX:-OmitStackTraceInFastThrow \
            -XX:ReservedCodeCacheSize=256M -XX:PerMethodRecompilationCutoff=10000 \
            -XX:PerBytecodeRecompilationCutoff=10000 -Djdk.attach.allowAttachSelf=true \
            -Djdk.nio.maxCachedBufferSize=2000000 -Dfile.encoding=UTF-8 -XX:+EnableDynamicAgentLoading \
            --enable-native-access=ALL-UNNAMED --sun-misc-unsafe-memory-access=allow \
            -Dnode.environment=phlo -Dnode.id=phlo-single-node -Dnode.data-dir="$RUN_DIR/trino-data" \
            -Dconfig="$RUN_DIR/trino-etc/config.properties" \
            -Dcatalog.config-dir="$RUN_DIR/trino-etc/catalog" \
            -Dlog.levels-file=/dev/null \
            io.trino.server.TrinoServer >"$RUN_DIR/trino.log" 2>&1 </dev/null
    ) &
    echo $! >"$RUN_DIR/trino.pid"
    wait_ready trino
}

stop() { # <service>
    local pid
    pid=$(pid_of "$1") || { rm -f "$RUN_DIR/$1.pid"; say "$1 is not running"; return 0; }
    say "stopping $1 (pid $pid)"
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 30); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null
    rm -f "$RUN_DIR/$1.pid"
}

status() { # <service>
    local pid port
    [ "$1" = trino ] && port=$TRINO_PORT || port=$NESSIE_PORT
    if pid=$(pid_of "$1") && "${1}_ready"; then
        echo "$1: ready on 127.0.0.1:$port (pid $pid)"
    elif pid=$(pid_of "$1"); then
        echo "$1: starting on 127.0.0.1:$port (pid $pid)"
        return 1
    else
        echo "$1: down"
        return 1
    fi
}

# --- command line -----------------------------------------------------------------------------

need curl curl
command="${1:-}"
[ $# -gt 0 ] && shift
services=("$@")
[ ${#services[@]} -eq 0 ] && services=(nessie trino)
for service in "${services[@]}"; do
    case "$service" in trino | nessie) ;; *) die "unknown service '$service' (trino, nessie)" ;; esac
done
mkdir -p "$RUN_DIR"

case "$command" in
up)
    # Nessie first: Trino's iceberg catalog talks to it.
    for service in nessie trino; do
        [[ " ${services[*]} " == *" $service "* ]] && "start_$service"
    done
    for service in "${services[@]}"; do status "$service"; done
    # scripts/test.sh hands these to the tests (tests/trino.rs reads them; defaults match).
    if [ -n "${PHLO_TEST_ENV:-}" ]; then
        echo "PHLO_TEST_TRINO_URL=http://127.0.0.1:$TRINO_PORT" >>"$PHLO_TEST_ENV"
        echo "PHLO_TEST_NESSIE_URL=http://127.0.0.1:$NESSIE_PORT/api/v2" >>"$PHLO_TEST_ENV"
        echo "PHLO_TEST_ICEBERG_LOCAL_ROOT=$RUN_DIR/warehouse" >>"$PHLO_TEST_ENV"
    fi
    ;;
down)
    # `if`, not `&&`: a service not named must not leave the loop (and the script) at status 1,
    # or `services.sh down trino && services.sh up trino` never starts it again.
    for service in trino nessie; do
        if [[ " ${services[*]} " == *" $service "* ]]; then stop "$service"; fi
    done
    ;;
status)
    rc=0
    for service in "${services[@]}"; do status "$service" || rc=1; done
    exit $rc
    ;;
*) die "usage: scripts/services.sh up|down|status [trino] [nessie]" ;;
esac
