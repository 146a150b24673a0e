-- @key result_id
-- One row per reportable result, with its sample, batch, instrument and specification.
select
    r.result_id,
    r.sample_id,
    s.batch_id,
    s.product_code,
    s.lab_site_code,
    r.instrument_id,
    i.instrument_type,
    r.analyte,
    r.result_value,
    r.unit,
    sp.lower_limit,
    sp.upper_limit,
    r.result_value between sp.lower_limit and sp.upper_limit as in_spec,
    r.measured_at,
    cast(r.measured_at as date) as measured_on,
    s.received_at,
    extract(epoch from (r.measured_at - s.received_at)) / 3600.0 as hours_from_receipt,
    r.analyst
from assay.staging.valid_results as r
join assay.staging.samples as s on s.sample_id = r.sample_id
join shared.instruments as i on i.instrument_id = r.instrument_id
join shared.product_specs as sp
    on sp.product_code = s.product_code
   and sp.analyte = r.analyte
