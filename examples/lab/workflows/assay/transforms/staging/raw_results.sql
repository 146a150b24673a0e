-- @not-null result_id,sample_id,instrument_id,analyte,result_status
-- Every measurement the LIMS recorded, including invalidated runs.
select
    r.result_id,
    r.sample_id,
    r.instrument_id,
    lower(r.analyte) as analyte,
    r.result_value,
    r.unit,
    cast(r.measured_at as timestamp) as measured_at,
    r.result_status,
    r.analyst
from lims.results as r
