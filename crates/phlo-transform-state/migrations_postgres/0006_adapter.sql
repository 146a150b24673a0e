-- The adapter that wrote each materialisation (`local`, `postgres`, `duckdb`, `trino`), so that
-- a model built by another adapter is rebuilt (`adapter_change`, SPEC §39). NULL: written
-- before adapters were tracked.
ALTER TABLE model_versions ADD COLUMN adapter TEXT;
