-- Freshness clocks: the newest source state each materialisation reflects (the minimum over
-- its inputs of the sources' as-of instants and the upstream models' own), RFC 3339 in UTC.
-- NULL: unknown (an input's is unknown, the model reads nothing, or the row predates this).
ALTER TABLE model_versions ADD COLUMN current_as_of TEXT;
