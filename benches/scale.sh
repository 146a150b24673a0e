#!/usr/bin/env bash
# Issue 17's end-to-end figures: `check` at several sizes of the realistic workspace, then a
# first `run`, two no-op `run`s and two no-op `plan`s, each under /usr/bin/time (wall, CPU =
# user + sys, peak RSS). A measurement, not a test; docs/performance.md records the figures.
#
#   cargo build --release && benches/scale.sh                 # check at 1k 2k 5k 10k 20k
#   SIZES="1000 10000" RUNSIZES="1000" benches/scale.sh       # plus run/plan at 1k
#
# Workspaces are generated once under $WORKDIR (default /tmp/phlo-scale) by the check bench.
set -u
cd "$(dirname "$0")/.."
BIN=${BIN:-target/release/phlo-transform}
WORKDIR=${WORKDIR:-/tmp/phlo-scale}
SIZES=${SIZES-1000 2000 5000 10000 20000}
RUNSIZES=${RUNSIZES-}
command -v /usr/bin/time > /dev/null || { echo "needs /usr/bin/time (apt-get install -y time)"; exit 2; }
mkdir -p "$WORKDIR"
measure() { # label, command...
    local label=$1 out rc
    shift
    out=$(mktemp)
    /usr/bin/time -f "%e %U %S %M" -o "$out.time" "$@" > "$out" 2>&1
    rc=$?
    read -r wall user sys rss < <(tail -1 "$out.time")
    printf "%-22s exit=%s wall=%6.2fs cpu=%6.2fs rss=%5dMiB\n" "$label" "$rc" "$wall" \
        "$(echo "$user + $sys" | bc)" $((rss / 1024))
    [ "$rc" -eq 0 ] || tail -5 "$out"
    rm -f "$out" "$out.time"
}
workspace() { # size → path, generated when absent
    local ws=$WORKDIR/r$1
    [ -d "$ws" ] || PHLO_BENCH_SHAPE=realistic PHLO_BENCH_GENERATE_ONLY="$ws,$1" \
        cargo bench --quiet --bench check > /dev/null
    echo "$ws"
}
echo "$(git rev-parse --short HEAD) $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)"
for n in $SIZES; do
    ws=$(workspace "$n")
    for rep in 1 2 3; do measure "check $n ($rep)" "$BIN" -C "$ws" check; done
done
for n in $RUNSIZES; do
    ws=$(workspace "$n")
    rm -rf "$ws/.phlo"
    measure "run $n (first)" "$BIN" -C "$ws" run
    for rep in 1 2; do measure "run $n (no-op $rep)" "$BIN" -C "$ws" run; done
    for rep in 1 2; do measure "plan $n (no-op $rep)" "$BIN" -C "$ws" plan; done
done
