"""Writes a small Iceberg table with pyiceberg's SqlCatalog (SQLite), independently of
phlo-transform.

    python3 write_iceberg.py <catalog-dir> <table-dir> <namespace.table> <step>

The catalog (catalog.db, SQLite) lives in <catalog-dir>, outside the workspace's sources; the
table's own location is <table-dir> (so `metadata/` and `data/` end up right there, where the
workspace's source convention looks for them).

step 1 creates the table and appends 4 rows (sample_id, site, passed);
step 2 appends 2 more rows (a new snapshot);
step `evolve` adds an optional string column `note` and writes no data: a new schema (id 1)
and a new metadata.json, but the current snapshot stays the one written under schema 0.
Prints {"metadata_location", "snapshot_id", "schema_id", "rows"} as JSON.
"""

import json
import os
import sys

import pyarrow as pa
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.exceptions import NamespaceAlreadyExistsError
from pyiceberg.types import StringType

SCHEMA = pa.schema(
    [
        pa.field("sample_id", pa.int64(), nullable=False),
        pa.field("site", pa.string()),
        pa.field("passed", pa.bool_()),
    ]
)

STEPS = {
    1: [
        (101, "oxford", True),
        (102, "oxford", False),
        (103, "cambridge", True),
        (104, "leeds", True),
    ],
    2: [
        (105, "cambridge", True),
        (106, "york", False),
    ],
}


def main() -> None:
    catalog_dir, table_dir, ident, step = (
        sys.argv[1],
        os.path.abspath(sys.argv[2]),
        sys.argv[3],
        sys.argv[4],
    )
    os.makedirs(catalog_dir, exist_ok=True)
    catalog_dir = os.path.abspath(catalog_dir)
    catalog = SqlCatalog(
        "phlo_test",
        uri=f"sqlite:///{catalog_dir}/catalog.db",
        warehouse=f"file://{catalog_dir}",
    )
    namespace = ident.rsplit(".", 1)[0]
    if step == "1":
        try:
            catalog.create_namespace(namespace)
        except NamespaceAlreadyExistsError:
            pass
        table = catalog.create_table(
            ident, schema=SCHEMA, location=f"file://{table_dir}"
        )
    else:
        table = catalog.load_table(ident)
    if step == "evolve":
        with table.update_schema() as update:
            update.add_column("note", StringType())
    else:
        rows = STEPS[int(step)]
        table.append(
            pa.Table.from_pylist(
                [dict(zip(SCHEMA.names, r)) for r in rows], schema=SCHEMA
            )
        )
    table = catalog.load_table(ident)
    snapshot = table.current_snapshot()
    print(
        json.dumps(
            {
                "metadata_location": table.metadata_location,
                "snapshot_id": snapshot.snapshot_id if snapshot else -1,
                "schema_id": table.metadata.current_schema_id,
                "rows": table.scan().to_arrow().num_rows,
            }
        )
    )


if __name__ == "__main__":
    main()
