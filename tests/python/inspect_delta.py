"""Reads a Delta table written by phlo-transform with delta-rs (Python `deltalake`), or
alters it as another writer would.

    python3 inspect_delta.py <table-dir> <app-id>
    python3 inspect_delta.py <table-dir> add-constraint <name> <expression>

Prints JSON: version, rows (sorted lists), columns, `nullable` per column, the table's
configuration (Change Data Feed, CHECK constraints, phlo.strategy, …), the application
transaction version of <app-id>, the operations of the history (oldest first), how many
change rows the Change Data Feed returns from version 0, and the protocol's writer version.
"""

import json
import os
import sys

from deltalake import DeltaTable


def main() -> None:
    table_dir = sys.argv[1]
    dt = DeltaTable(table_dir)
    if sys.argv[2] == "add-constraint":
        dt.alter.add_constraint({sys.argv[3]: sys.argv[4]})
        print(json.dumps({"version": DeltaTable(table_dir).version()}))
        return
    app_id = sys.argv[2]
    data = dt.to_pyarrow_table()
    columns = data.column_names
    rows = sorted(
        ([r[c] for c in columns] for r in data.to_pylist()),
        key=lambda r: json.dumps(r, default=str),
    )
    schema = dt.schema()
    cdf_rows = None
    if dt.metadata().configuration.get("delta.enableChangeDataFeed") == "true":
        cdf_rows = dt.load_cdf(starting_version=0).read_all().num_rows
    print(
        json.dumps(
            {
                "version": dt.version(),
                "rows": rows,
                "columns": columns,
                "nullable": {f.name: f.nullable for f in schema.fields},
                "configuration": dt.metadata().configuration,
                "partition_columns": dt.metadata().partition_columns,
                "txn_version": dt.transaction_version(app_id),
                "operations": [h.get("operation") for h in reversed(dt.history())],
                "cdf_rows": cdf_rows,
                "min_writer_version": dt.protocol().min_writer_version,
            },
            default=str,
        )
    )


if __name__ == "__main__":
    main()
    # delta-rs's Python bindings can abort at interpreter shutdown (delta-io/delta-rs#2184)
    # after all the work is done: leave at once.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
