-- One writer per environment (issue 10): `run` / `apply` hold a lease with an expiry, renewed
-- while they run. A process that dies stops renewing, so its lease expires instead of blocking
-- forever; `holder` names the host and process so a dead holder on the same host is seen at once.
CREATE TABLE writer_leases (
    scope       TEXT PRIMARY KEY,
    holder      TEXT NOT NULL,
    acquired_at TEXT NOT NULL,
    expires_ms  INTEGER NOT NULL
);
