"""Reads a Delta table written by phlo-transform with delta-rs (Python `deltalake`).

    python3 read_delta.py <table-dir> <app-id>

Prints JSON: rows, columns, version, the application-transaction version of <app-id>
(`txn_version`, from DeltaTable.transaction_version and, cross-checked, from the log's `txn`
actions: `txn_version_log`), the last commit's `phlo.model_version` / `phlo.run_id`
(from history(), and from the log JSON's commitInfo), and the rows themselves
(sorted, as lists) so the test can compare contents.
"""

import glob
import json
import os
import sys

from deltalake import DeltaTable


def log_actions(table_dir: str):
    files = sorted(glob.glob(os.path.join(table_dir, "_delta_log", "*.json")))
    for path in files:
        version = int(os.path.basename(path).split(".")[0])
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line:
                    yield version, json.loads(line)


def main() -> None:
    table_dir, app_id = sys.argv[1], sys.argv[2]
    dt = DeltaTable(table_dir)
    data = dt.to_pyarrow_table()
    columns = data.column_names
    rows = sorted(
        ([r[c] for c in columns] for r in data.to_pylist()),
        key=lambda r: json.dumps(r, default=str),
    )

    txn_api = dt.transaction_version(app_id) if hasattr(dt, "transaction_version") else None

    txn_log = None
    last_commit_info = {}
    last_commit_version = -1
    for version, action in log_actions(table_dir):
        if "txn" in action and action["txn"].get("appId") == app_id:
            txn_log = action["txn"].get("version")
        if "commitInfo" in action and version >= last_commit_version:
            last_commit_version = version
            last_commit_info = action["commitInfo"]

    history = dt.history(1)
    last = history[0] if history else {}

    print(
        json.dumps(
            {
                "rows": data.num_rows,
                "columns": columns,
                "version": dt.version(),
                "txn_version": txn_api,
                "txn_version_log": txn_log,
                "history_model_version": last.get("phlo.model_version"),
                "history_run_id": last.get("phlo.run_id"),
                "log_model_version": last_commit_info.get("phlo.model_version"),
                "log_run_id": last_commit_info.get("phlo.run_id"),
                "data": rows,
            },
            default=str,
        )
    )


if __name__ == "__main__":
    main()
    # delta-rs's Python bindings can abort at interpreter shutdown ("terminate called without
    # an active exception", delta-io/delta-rs#2184) after all the work is done: leave at once.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
