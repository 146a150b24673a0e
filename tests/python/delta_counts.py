"""Reads Delta tables written by phlo-transform with delta-rs (Python `deltalake`), as an
independent reader: each table's version and row count.

    python3 delta_counts.py <table-dir>...

Prints JSON: {"<table-dir>": {"version": v, "rows": n}, ...}.
"""

import json
import os
import sys

from deltalake import DeltaTable


def main() -> None:
    out = {}
    for table_dir in sys.argv[1:]:
        dt = DeltaTable(table_dir)
        out[table_dir] = {"version": dt.version(), "rows": dt.to_pyarrow_table().num_rows}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
    sys.stdout.flush()
    # delta-rs's Python bindings can abort at interpreter shutdown (delta-io/delta-rs#2184)
    # after all the work is done: leave at once.
    os._exit(0)
