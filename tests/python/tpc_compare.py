"""Compares the tables phlo-transform built for a workspace with what `check` declared
(`.phlo/transform/manifest.json`) and, for a workspace of `tpc_workspace.py`, with DuckDB's
answer (`duckdb.json`).

    python3 tpc_compare.py <workspace> [--types]

Prints a JSON list of differences, one line of text each; an empty list means every table
model was built, its Delta table's columns are exactly the types and nullability `check`
declared (NOT NULL also for `@key`/`@not-null` columns) (read back with the independent `deltalake` reader), and its rows equal DuckDB's where it has an answer (as
multisets; numbers within a relative 1e-9 or one unit of the coarser DECIMAL's last digit, so
DECIMAL(p, s) and DOUBLE answers of the same value agree). With `--types` the column types must also equal DuckDB's, in Delta's vocabulary.
"""

import decimal
import json
import math
import os
import re
import sys

from deltalake import DeltaTable

# Arrow type names (DataFusion's display in the manifest, pyarrow's in duckdb.json) → Delta.
# Delta has no unsigned integers: a UInt64 (`rank()`, `row_number()`) is stored as `long`.
ARROW_TO_DELTA = {
    "utf8": "string",
    "utf8view": "string",
    "largeutf8": "string",
    "string": "string",
    "int8": "byte",
    "int16": "short",
    "int32": "integer",
    "int64": "long",
    "uint64": "long",
    "float32": "float",
    "float": "float",
    "float64": "double",
    "double": "double",
    "boolean": "boolean",
    "bool": "boolean",
    "date32": "date",
    "date32[day]": "date",
}


def delta_type(arrow: str) -> str:
    t = arrow.strip().lower()
    m = re.fullmatch(r"decimal128\((\d+),\s*(\d+)\)", t)
    if m:
        return f"decimal({m.group(1)},{m.group(2)})"
    if t.startswith("timestamp"):
        zoned = "tz=" in t or "some(" in t or '"' in t
        return "timestamp" if zoned else "timestamp_ntz"
    return ARROW_TO_DELTA.get(t, t)


def number(v):
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float, decimal.Decimal)):
        return float(v)
    return None


def normal(v):
    """A value as both engines' answers can be compared: numbers as floats, the rest as text."""
    if v is None:
        return None
    n = number(v)
    return n if n is not None else str(v)


def sort_key(row):
    return [(v is None, isinstance(v, float), v if isinstance(v, float) else str(v)) for v in row]


def scale(delta: str):
    m = re.fullmatch(r"decimal\((\d+),(\d+)\)", delta)
    return int(m.group(2)) if m else None


def same(a, b, unit: float) -> bool:
    """Numbers agree within a relative 1e-9, or within `unit`: one unit of the last digit of
    the coarser DECIMAL answer (DataFusion's `avg` of a DECIMAL(p, s) is DECIMAL(p+4, s+4),
    truncated, where DuckDB's is an exact DOUBLE)."""
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return abs(a - b) <= max(1e-9 * max(abs(a), abs(b), 1.0), unit)
    return a == b


def expected_value(v):
    if v in ("inf", "-inf", "nan"):
        return float(v)
    return normal(v)


def main(workspace: str, types: bool) -> None:
    answers = os.path.join(workspace, "duckdb.json")
    duckdb = {}
    if os.path.exists(answers):
        with open(answers) as f:
            duckdb = json.load(f)
    with open(os.path.join(workspace, ".phlo", "transform", "manifest.json")) as f:
        manifest = {m["name"]: m for m in json.load(f)["models"]}
    differences = []
    tables = sorted(m for m, entry in manifest.items() if entry["materialization"] == "table")
    for model in tables:
        answer = duckdb.get(model)
        table_dir = os.path.join(workspace, ".phlo", "warehouse", model)
        if not os.path.isdir(os.path.join(table_dir, "_delta_log")):
            differences.append(f"{model}: not built")
            continue
        table = DeltaTable(table_dir)
        fields = json.loads(table.schema().to_json())["fields"]
        stored = [(f["name"], f["type"], f["nullable"]) for f in fields]
        # `@key` and `@not-null` columns are NOT NULL on the table whatever the query proves.
        config = manifest[model]["config"]
        required = set(config["key"]["value"]) | set(config["not_null"]["value"])
        declared = [
            (c["name"], delta_type(c["type"]), c["nullable"] and c["name"] not in required)
            for c in manifest[model]["schema"].get("columns", [])
        ]
        if stored != declared:
            differences.append(f"{model}: check declared {declared}, the Delta table has {stored}")
        if answer is None:
            continue
        if types:
            # By position: an unaliased expression is named differently (docs/dialects.md).
            theirs = [delta_type(t) for _, t in answer["columns"]]
            ours = [t for _, t, _ in stored]
            if theirs != ours:
                pairs = [
                    f"{name} {a} (DuckDB {b})"
                    for (name, _, _), a, b in zip(stored, ours, theirs)
                    if a != b
                ]
                differences.append(f"{model}: types differ: {', '.join(pairs) or (ours, theirs)}")
        local = sorted(
            ([normal(v) for v in row.values()] for row in table.to_pyarrow_table().to_pylist()),
            key=sort_key,
        )
        wanted = sorted(
            ([expected_value(v) for v in row] for row in answer["rows"]), key=sort_key
        )
        if len(local) != len(wanted):
            differences.append(f"{model}: {len(local)} rows, DuckDB {len(wanted)}")
            continue
        scales = [
            [x for x in (scale(ours), scale(delta_type(theirs))) if x is not None]
            for (_, ours, _), (_, theirs) in zip(stored, answer["columns"])
        ]
        units = [10.0 ** -min(s) if s else 0.0 for s in scales]
        for ours, theirs in zip(local, wanted):
            if len(ours) != len(theirs) or not all(map(same, ours, theirs, units)):
                differences.append(f"{model}: row {ours} where DuckDB has {theirs}")
                break
    json.dump(differences, sys.stdout, indent=1)
    # deltalake's runtime threads can abort the interpreter's teardown ("terminate called
    # without an active exception"), turning a finished comparison into a failed process.
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv[1], "--types" in sys.argv[2:])
