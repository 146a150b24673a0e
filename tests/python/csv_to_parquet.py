"""Converts CSV files to Parquet with exact column types (pyarrow), so that the local engine
reads decimals as decimals, like a warehouse does.

    python3 csv_to_parquet.py <dir> '<json: {"table": [["column", "type"], ...]}>'

Types: bigint, integer, numeric(p,s), date, text. Writes <dir>/<table>.parquet.
"""

import json
import os
import re
import sys

import pyarrow as pa
import pyarrow.csv as csv
import pyarrow.parquet as pq


def arrow_type(name: str) -> pa.DataType:
    m = re.fullmatch(r"numeric\((\d+),(\d+)\)", name)
    if m:
        return pa.decimal128(int(m.group(1)), int(m.group(2)))
    return {"bigint": pa.int64(), "integer": pa.int32(), "date": pa.date32(), "text": pa.string()}[name]


def main() -> None:
    folder, spec = sys.argv[1], json.loads(sys.argv[2])
    for table, columns in spec.items():
        types = {c: arrow_type(t) for c, t in columns}
        data = csv.read_csv(
            os.path.join(folder, f"{table}.csv"),
            convert_options=csv.ConvertOptions(column_types=types),
        )
        pq.write_table(data, os.path.join(folder, f"{table}.parquet"))


if __name__ == "__main__":
    main()
