"""The comparison half of `cargo bench -p phlo-transform-diff --bench diff`: the same diff of
the same Parquet files by DuckDB (a NULL-safe FULL OUTER JOIN, per-column change counts) and
by reladiff (on a DuckDB file holding the same tables; its hashdiff bisection and its joindiff).

    python3 diff_compare.py <dir> <case>...     # prints one JSON object per line

Needs `python3 -m pip install duckdb reladiff`. Loading the DuckDB file is not timed.
"""

import json
import multiprocessing
import os
import sys
import time

import duckdb
import reladiff

COLUMNS = ["a", "b", "c", "d"]
THREADS = int(os.environ.get("PHLO_DIFF_BENCH_THREADS", "2"))
# A tool that takes longer is reported as a timeout.
TIMEOUT = int(os.environ.get("PHLO_DIFF_BENCH_TIMEOUT", "900"))


def duckdb_join_diff(base, cand):
    con = duckdb.connect()
    con.execute(f"SET threads = {THREADS}")
    changed = ", ".join(
        f"count(*) FILTER (WHERE b.id IS NOT NULL AND c.id IS NOT NULL AND b.{x} IS DISTINCT FROM c.{x}) AS {x}"
        for x in COLUMNS
    )
    any_changed = " OR ".join(f"b.{x} IS DISTINCT FROM c.{x}" for x in COLUMNS)
    sql = f"""
        SELECT count(*) FILTER (WHERE b.id IS NULL) AS added,
               count(*) FILTER (WHERE c.id IS NULL) AS removed,
               count(*) FILTER (WHERE b.id IS NOT NULL AND c.id IS NOT NULL AND ({any_changed})) AS modified,
               {changed}
        FROM read_parquet('{base}') b
        FULL OUTER JOIN read_parquet('{cand}') c ON b.id = c.id
    """
    start = time.perf_counter()
    row = con.execute(sql).fetchone()
    elapsed = time.perf_counter() - start
    return elapsed, {"added": row[0], "removed": row[1], "modified": row[2]}


def duckdb_file(directory, base, cand, case):
    path = os.path.join(directory, f"reladiff_{case}.duckdb")
    if not os.path.exists(path):
        con = duckdb.connect(path)
        con.execute(f"CREATE TABLE base AS SELECT * FROM read_parquet('{base}')")
        con.execute(f"CREATE TABLE cand AS SELECT * FROM read_parquet('{cand}')")
        con.close()
    return path


def reladiff_run(path, algorithm):
    t1 = reladiff.connect_to_table(f"duckdb://{path}", "base", "id", thread_count=THREADS)
    t2 = reladiff.connect_to_table(f"duckdb://{path}", "cand", "id", thread_count=THREADS)
    start = time.perf_counter()
    added = removed = 0
    modified = set()
    for sign, row in reladiff.diff_tables(
        t1, t2, extra_columns=tuple(COLUMNS), algorithm=algorithm, threaded=True,
        max_threadpool_size=THREADS,
    ):
        if sign == "-":
            removed += 1
            modified.add(row[0])
        else:
            added += 1
            modified.add(row[0])
    elapsed = time.perf_counter() - start
    # reladiff yields a modified row as a "-" and a "+" with the same key.
    both = removed + added - len(modified)
    return elapsed, {"added": added - both, "removed": removed - both, "modified": both}


def timed(queue, fn, args):
    queue.put(fn(*args))


def bounded(fn, *args):
    """Runs fn(*args) in a child process; None when it exceeds TIMEOUT seconds."""
    queue = multiprocessing.Queue()
    child = multiprocessing.Process(target=timed, args=(queue, fn, args))
    child.start()
    child.join(TIMEOUT)
    if child.is_alive():
        child.terminate()
        child.join()
        return None
    return queue.get()


def report(case, tool, result):
    if result is None:
        print(json.dumps({"case": case, "tool": tool, "seconds": None, "timeout": TIMEOUT}), flush=True)
        return
    elapsed, counts = result
    print(json.dumps({"case": case, "tool": tool, "seconds": round(elapsed, 3), **counts}), flush=True)


def main():
    directory = sys.argv[1]
    for case in sys.argv[2:]:
        base = os.path.join(directory, "base.parquet")
        cand = os.path.join(directory, f"cand_{case}.parquet")
        for _ in range(2):
            report(case, "duckdb full outer join", bounded(duckdb_join_diff, base, cand))
        path = duckdb_file(directory, base, cand, case)
        for algorithm in [reladiff.Algorithm.JOINDIFF, reladiff.Algorithm.HASHDIFF]:
            report(case, f"reladiff {algorithm.value}", bounded(reladiff_run, path, algorithm))


if __name__ == "__main__":
    main()
