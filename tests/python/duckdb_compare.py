"""Runs a workspace's table models on the real DuckDB engine (Python `duckdb`) and reads what
phlo-transform's local engine wrote for them (Python `deltalake`), for a side-by-side check.

    python3 duckdb_compare.py <workspace>

Sources are the workspace's `sources/<namespace>/<name>.csv` files, read with DuckDB's
`read_csv`; each `-- @table` model under `transforms/<namespace>/` is run as written against
them (models here read sources only). Prints JSON: one entry per model with both engines'
column types (Arrow type names; the string representations folded into `string`) and rows
(sorted, as lists, so order-free results compare); a model the local engine did not write has
null ones.
"""

import glob
import json
import math
import os
import sys

import duckdb
from deltalake import DeltaTable


def type_name(t) -> str:
    s = str(t)
    return "string" if s in ("string", "large_string", "string_view") else s


def value(v):
    if isinstance(v, float) and math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if v is None or isinstance(v, (int, float, str, bool)):
        return v
    return str(v)


def rows(table):
    out = [[value(v) for v in row.values()] for row in table.to_pylist()]
    return sorted(out, key=lambda r: [(v is None, str(v)) for v in r])


def main(workspace: str) -> None:
    con = duckdb.connect()
    for path in sorted(glob.glob(os.path.join(workspace, "sources", "*", "*.csv"))):
        namespace = os.path.basename(os.path.dirname(path))
        name = os.path.splitext(os.path.basename(path))[0]
        con.execute(f'create schema if not exists "{namespace}"')
        literal = "'" + os.path.abspath(path).replace("'", "''") + "'"
        con.execute(
            f'create view "{namespace}"."{name}" as select * from read_csv({literal})'
        )
    report = []
    for path in sorted(glob.glob(os.path.join(workspace, "transforms", "*", "*.sql"))):
        with open(path) as f:
            sql = f.read()
        if "-- @table" not in sql:
            continue
        model = (
            os.path.basename(os.path.dirname(path))
            + "."
            + os.path.splitext(os.path.basename(path))[0]
        )
        expected = con.sql(sql).arrow()
        if hasattr(expected, "read_all"):
            expected = expected.read_all()
        table_dir = os.path.join(workspace, ".phlo", "warehouse", model)
        local = (
            DeltaTable(table_dir).to_pyarrow_table()
            if os.path.isdir(os.path.join(table_dir, "_delta_log"))
            else None
        )
        report.append(
            {
                "model": model,
                "duckdb_types": [f"{f.name}:{type_name(f.type)}" for f in expected.schema],
                "local_types": None
                if local is None
                else [f"{f.name}:{type_name(f.type)}" for f in local.schema],
                "duckdb_rows": rows(expected),
                "local_rows": None if local is None else rows(local),
            }
        )
    json.dump(report, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1])
