"""Generates the data-diff benchmark's tables with DuckDB (fast, deterministic):

    python3 diff_data.py <dir> <rows>

base.parquet: id BIGINT, a BIGINT, b DOUBLE, c VARCHAR, d INT. cand_0_1.parquet: 0.1% of the
rows modified (a + 1, b + 0.5), 0.05% removed, rows/2000 added; cand_10.parquet: the same with
10% modified. expected.json holds each case's added / removed / modified counts.
"""

import json
import os
import sys

import duckdb


def main():
    directory, rows = sys.argv[1], int(sys.argv[2])
    os.makedirs(directory, exist_ok=True)
    con = duckdb.connect()
    con.execute("SET threads = 2")
    row = """SELECT range AS id, (hash(range) % 1000000)::BIGINT AS a,
                    (hash(range) >> 20)::DOUBLE / 1024 AS b,
                    's' || (hash(range) % 5000)::VARCHAR AS c, (hash(range) % 20000)::INT AS d"""
    con.execute(f"COPY ({row} FROM range({rows})) TO '{directory}/base.tmp' (FORMAT parquet, ROW_GROUP_SIZE 1048576)")
    os.replace(f"{directory}/base.tmp", f"{directory}/base.parquet")
    expected = {}
    for case, per_thousand in [("0_1", 1), ("10", 100)]:
        changed = f"hash(range + 13) % 1000 < {per_thousand}"
        removed = "hash(range + 7) % 2000 = 1"
        added = rows // 2000
        con.execute(f"""COPY (
            SELECT range AS id,
                   ((hash(range) % 1000000) + CASE WHEN {changed} THEN 1 ELSE 0 END)::BIGINT AS a,
                   (hash(range) >> 20)::DOUBLE / 1024 + CASE WHEN {changed} THEN 0.5 ELSE 0 END AS b,
                   's' || (hash(range) % 5000)::VARCHAR AS c, (hash(range) % 20000)::INT AS d
            FROM range({rows}) WHERE NOT ({removed})
            UNION ALL
            {row} FROM range({rows}, {rows + added})
        ) TO '{directory}/cand.tmp' (FORMAT parquet, ROW_GROUP_SIZE 1048576)""")
        os.replace(f"{directory}/cand.tmp", f"{directory}/cand_{case}.parquet")
        n_removed, n_modified = con.execute(
            f"SELECT count(*) FILTER (WHERE {removed}), count(*) FILTER (WHERE NOT ({removed}) AND {changed}) FROM range({rows})"
        ).fetchone()
        expected[case] = {"added": added, "removed": n_removed, "modified": n_modified}
    with open(f"{directory}/expected.json", "w") as f:
        json.dump(expected, f)


if __name__ == "__main__":
    main()
