"""Builds a dbt project with dbt-duckdb (`dbt seed`, then `dbt run`) and prints the rows of the
given models, for a comparison with what phlo-transform built from the same project after
`import dbt`.

    python dbt_duckdb_rows.py <dbt-project-copy> <model>...

The project's own profiles.yml is used (`--profiles-dir` the project), so its DuckDB file is
written inside the copy. Prints JSON in tests/python/table_rows.py's shape:
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
env = dict(os.environ, DBT_SEND_ANONYMOUS_USAGE_STATS="false", DO_NOT_TRACK="1", DBT_VERSION_CHECK="false")
dbt = os.path.join(os.path.dirname(sys.executable), "dbt")
for command in (["seed"], ["run"]):
    done = subprocess.run(
        [dbt, *command, "--profiles-dir", project, "--project-dir", project],
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
for model in sys.argv[2:]:
    result = con.execute(f'select * from "{model}"')
    columns = [d[0] for d in result.description]
    out[model] = {"columns": columns, "rows": [[plain(v) for v in row] for row in result.fetchall()]}
print(json.dumps(out))
