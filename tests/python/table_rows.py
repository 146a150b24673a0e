"""Reads Delta tables written by phlo-transform with delta-rs (Python `deltalake`), as an
independent reader, and prints their rows for a canonical comparison with another engine.

    python3 table_rows.py <table-dir>...

Prints JSON: {"<table-dir>": {"columns": [...], "rows": [[...], ...]}, ...}; decimals become
floats, dates and timestamps ISO strings.
"""

import datetime
import decimal
import json
import os
import sys

from deltalake import DeltaTable


def plain(v):
    if isinstance(v, decimal.Decimal):
        return float(v)
    if isinstance(v, (datetime.date, datetime.datetime)):
        return v.isoformat()
    return v


def main() -> None:
    out = {}
    for table_dir in sys.argv[1:]:
        data = DeltaTable(table_dir).to_pyarrow_table()
        columns = data.column_names
        rows = [[plain(r[c]) for c in columns] for r in data.to_pylist()]
        out[table_dir] = {"columns": columns, "rows": rows}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
    sys.stdout.flush()
    # delta-rs's Python bindings can abort at interpreter shutdown (delta-io/delta-rs#2184).
    os._exit(0)
