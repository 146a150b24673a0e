-- @key batch_id
-- QC verdict per tested batch: how many of the four release analytes have a reportable
-- result, and how many of those are out of specification.
select
    f.batch_id,
    f.product_code,
    f.lab_site_code,
    count(*) as results,
    count(distinct f.analyte) as analytes_tested,
    sum(case when f.in_spec then 0 else 1 end) as out_of_spec_results,
    string_agg(case when f.in_spec then null else f.analyte end, ',') as out_of_spec_analytes,
    min(f.received_at) as received_at,
    max(f.measured_at) as last_measured_at
from assay.marts.result_facts as f
group by f.batch_id, f.product_code, f.lab_site_code
