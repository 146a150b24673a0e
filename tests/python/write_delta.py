"""Writes a small Delta table with delta-rs (Python `deltalake`), independently of phlo-transform.

    python3 write_delta.py <table-dir> <step>

step 1 creates the table (version 0) with 5 rows (id, site, value);
step 2 appends 3 rows (version 1). Prints {"version": N, "rows": M} as JSON.
"""

import json
import os
import sys

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

SCHEMA = pa.schema(
    [("id", pa.int64()), ("site", pa.string()), ("value", pa.float64())]
)

STEPS = {
    1: (
        "overwrite",
        [
            (1, "oxford", 1.5),
            (2, "oxford", 2.5),
            (3, "cambridge", 3.0),
            (4, "leeds", 4.0),
            (5, "cambridge", 5.0),
        ],
    ),
    2: (
        "append",
        [
            (6, "oxford", 6.0),
            (7, "leeds", 7.0),
            (8, "york", 8.0),
        ],
    ),
}


def main() -> None:
    table_dir, step = sys.argv[1], int(sys.argv[2])
    mode, rows = STEPS[step]
    data = pa.Table.from_pylist(
        [dict(zip(SCHEMA.names, r)) for r in rows], schema=SCHEMA
    )
    write_deltalake(table_dir, data, mode=mode)
    dt = DeltaTable(table_dir)
    print(json.dumps({"version": dt.version(), "rows": dt.to_pyarrow_table().num_rows}))


if __name__ == "__main__":
    main()
    # delta-rs's Python bindings can abort at interpreter shutdown ("terminate called without
    # an active exception", delta-io/delta-rs#2184) after all the work is done: leave at once.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
