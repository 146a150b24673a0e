"""Reads a Delta table at one version with delta-rs (Python `deltalake`): what a reader of an
environment sees when it follows the environment's pointer (`ref show --json`).

    python3 read_delta_at.py <table-dir> [<version>]

Prints JSON: the version read and the rows, sorted, as lists of strings.
"""

import json
import os
import sys

from deltalake import DeltaTable


def main() -> None:
    table_dir = sys.argv[1]
    version = int(sys.argv[2]) if len(sys.argv) > 2 else None
    dt = DeltaTable(table_dir) if version is None else DeltaTable(table_dir, version=version)
    data = dt.to_pyarrow_table()
    rows = sorted([str(r[c]) for c in data.column_names] for r in data.to_pylist())
    print(json.dumps({"version": dt.version(), "rows": rows}))


if __name__ == "__main__":
    main()
    # delta-rs's Python bindings can abort at interpreter shutdown (delta-io/delta-rs#2184).
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
