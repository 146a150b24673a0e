"""Reads the dbt artifacts phlo-transform wrote (`<workspace>/target/manifest.json` and
`run_results.json`) with two independent readers, and prints what they read as JSON:

- `dbt-artifacts-parser` (PyPI, pinned in scripts/test.sh; the parser dbt catalogs'
  ingestion uses), whose pydantic models of manifest v12 and run results v6 forbid unknown
  keys: each node is reported with the class it parsed as;
- dbt-core's own artifact reader (`WritableManifest.read_and_check_versions`,
  `RunResultsArtifact.read_and_check_versions`), what `dbt --state` and `--defer` load.

    python dbt_artifacts.py <workspace>

Exits non-zero (a traceback) when either reader refuses a document.
"""

import json
import sys

from dbt_artifacts_parser.parser import parse_manifest_v12, parse_run_results_v6
from dbt.artifacts.schemas.run import RunResultsArtifact
from dbt.contracts.graph.manifest import WritableManifest

target = sys.argv[1] + "/target"
with open(target + "/manifest.json") as f:
    manifest = parse_manifest_v12(json.load(f))
with open(target + "/run_results.json") as f:
    run_results = parse_run_results_v6(json.load(f))
core_manifest = WritableManifest.read_and_check_versions(target + "/manifest.json")
core_results = RunResultsArtifact.read_and_check_versions(target + "/run_results.json")


def value(v):
    return getattr(v, "value", v)


nodes = {}
for uid, node in manifest.nodes.items():
    entry = {
        "class": type(node).__name__,
        "resource_type": value(node.resource_type),
        "name": node.name,
        "schema": node.schema_,
        "alias": node.alias,
        "depends_on": node.depends_on.nodes,
        "description": node.description,
        "meta": node.meta,
    }
    if entry["resource_type"] == "model":
        entry["materialized"] = node.config.materialized
        entry["columns"] = {
            c.name: {"data_type": c.data_type, "description": c.description}
            for c in node.columns.values()
        }
    if getattr(node, "test_metadata", None) is not None:
        entry["test"] = [node.test_metadata.name, node.column_name, node.attached_node]
    nodes[uid] = entry

print(
    json.dumps(
        {
            "project": manifest.metadata.project_name,
            "schema_versions": [
                manifest.metadata.dbt_schema_version,
                run_results.metadata.dbt_schema_version,
            ],
            "nodes": nodes,
            "sources": {
                uid: {"source_name": s.source_name, "name": s.name, "columns": list(s.columns)}
                for uid, s in manifest.sources.items()
            },
            "parent_map": manifest.parent_map,
            "results": {r.unique_id: value(r.status) for r in run_results.results},
            "failures": {r.unique_id: r.failures for r in run_results.results if r.failures},
            "dbt_core": {
                "nodes": len(core_manifest.nodes),
                "sources": len(core_manifest.sources),
                "results": len(core_results.results),
            },
        }
    )
)
