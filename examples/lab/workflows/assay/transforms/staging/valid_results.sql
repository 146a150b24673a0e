-- @ephemeral
-- Reportable results only: invalidated runs (system suitability failures, drift) are
-- superseded by a retest of the same sample and analyte.
select
    r.result_id,
    r.sample_id,
    r.instrument_id,
    r.analyte,
    r.result_value,
    r.unit,
    r.measured_at,
    r.analyst
from assay.staging.raw_results as r
where r.result_status = 'valid'
