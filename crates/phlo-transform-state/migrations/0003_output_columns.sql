-- The columns a materialisation was written with (JSON array of {name, type, nullable}), so
-- `plan` classifies schema changes against what exists (SPEC §49-51).
ALTER TABLE model_versions ADD COLUMN output_columns TEXT;
