-- Evidence records of environments (SPEC §45, §52): immutable once written, each bound to the
-- reference it is about and that reference's hash. `kind` is `environment` (a candidate's
-- provisioning, with its `created_from`) or `branch_diff` (a diff of two references, `ref`
-- its candidate side). Deleting a reference deletes its evidence in the same transaction.
CREATE TABLE evidence (
    evidence_id TEXT PRIMARY KEY,
    kind        TEXT NOT NULL,
    ref         TEXT NOT NULL,
    hash        TEXT NOT NULL,
    at          TEXT NOT NULL,
    body        TEXT NOT NULL
);

CREATE INDEX evidence_by_ref ON evidence (kind, ref);
