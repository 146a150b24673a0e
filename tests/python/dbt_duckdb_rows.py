"""Builds a dbt project with dbt-duckdb (`dbt seed`, then `dbt run`) and prints the rows of the
given models, for a comparison with what phlo-transform built from the same project after
`import dbt`.

    python dbt_duckdb_rows.py <dbt-project-copy> [--target <target>] <model>...

The project's own profiles.yml is used (`--profiles-dir` the project), with its default
target or the one given, which must write a DuckDB file inside the copy. A model is read from
the one schema that has a relation of its name. Prints JSON in tests/python/table_rows.py's shape:
{"<model>": {"columns": [...], "rows": [[...], ...]}}; decimals become floats, dates and
timestamps ISO strings.
"""

import datetime
import decimal
import json
import os
import subprocess
import sys

import duckdb

project = os.path.abspath(sys.argv[1])
models = sys.argv[2:]
target = []
if models[:1] == ["--target"]:
    target, models = models[:2], models[2:]
env = dict(os.environ, DBT_SEND_ANONYMOUS_USAGE_STATS="false", DO_NOT_TRACK="1", DBT_VERSION_CHECK="false")
dbt = os.path.join(os.path.dirname(sys.executable), "dbt")
for command in (["seed"], ["run"]):
    done = subprocess.run(
        [dbt, *command, "--profiles-dir", project, "--project-dir", project, *target],
        cwd=project, env=env, capture_output=True, text=True,
    )
    if done.returncode != 0:
        sys.stderr.write(done.stdout + done.stderr)
        sys.exit(1)


def plain(v):
    if isinstance(v, decimal.Decimal):
        return float(v)
    if isinstance(v, (datetime.date, datetime.datetime)):
        return v.isoformat()
    return v


databases = [f for f in os.listdir(project) if f.endswith(".duckdb")]
con = duckdb.connect(os.path.join(project, databases[0]), read_only=True)
out = {}
for model in models:
    schemas = con.execute(
        "select table_schema from information_schema.tables where table_name = ?", [model]
    ).fetchall()
    if len(schemas) != 1:
        sys.exit(f"{model}: in {len(schemas)} schemas of the dbt-duckdb database")
    result = con.execute(f'select * from "{schemas[0][0]}"."{model}"')
    columns = [d[0] for d in result.description]
    out[model] = {"columns": columns, "rows": [[plain(v) for v in row] for row in result.fetchall()]}
print(json.dumps(out))
