"""Reads tables of a DuckDB database file written by phlo-transform with the Python `duckdb`
package (PyPI), as an independent reader.

    python3 duckdb_rows.py <database-file> <schema.table>...

Prints JSON: {"<schema.table>": {"columns": [...], "types": [...], "rows": [[...], ...],
"comment": "..."}}; types as DuckDB's catalog names them (`DECIMAL(15,2)`), decimals become
floats, dates ISO strings.
"""

import datetime
import decimal
import json
import sys

import duckdb


def plain(v):
    if isinstance(v, decimal.Decimal):
        return float(v)
    if isinstance(v, (datetime.date, datetime.datetime)):
        return v.isoformat()
    return v


def main() -> None:
    con = duckdb.connect(sys.argv[1], read_only=True)
    out = {}
    for name in sys.argv[2:]:
        schema, table = name.split(".", 1)
        cur = con.execute(f'SELECT * FROM "{schema}"."{table}"')
        columns = [d[0] for d in cur.description]
        rows = [[plain(v) for v in r] for r in cur.fetchall()]
        comment = con.execute(
            "SELECT comment FROM duckdb_tables() WHERE schema_name = ? AND table_name = ?",
            [schema, table],
        ).fetchone()
        types = [
            t
            for (t,) in con.execute(
                "SELECT data_type FROM duckdb_columns() WHERE schema_name = ? AND table_name = ? "
                "ORDER BY column_index",
                [schema, table],
            ).fetchall()
        ]
        out[name] = {
            "columns": columns,
            "types": types,
            "rows": rows,
            "comment": comment[0] if comment else None,
        }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
