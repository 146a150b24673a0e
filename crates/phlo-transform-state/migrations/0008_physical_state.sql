-- What the adapter read of each written relation after the write (SPEC §39, §69): its output
-- identity (`iceberg:snapshot:…,schema:…`), compared at plan time with what the relation
-- reports now (`output_drift`), and its physical state (Iceberg snapshot, schema, partition
-- spec, properties) as a JSON object for `inspect`. NULL: the adapter proves no identity.
ALTER TABLE model_versions ADD COLUMN output_identity TEXT;
ALTER TABLE model_versions ADD COLUMN physical_state TEXT;
-- The warehouse queries of each attempt with the engine's statistics (SPEC §68), a JSON array.
ALTER TABLE node_attempts ADD COLUMN queries TEXT;
