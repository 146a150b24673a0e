-- Fingerprints that classify a SQL change as text-only, AST-level or semantic (SPEC §99).
-- Mirrors migrations/0002_change_fingerprints.sql (SQLite).
ALTER TABLE model_versions ADD COLUMN text_hash TEXT;
ALTER TABLE model_versions ADD COLUMN plan_hash TEXT;
