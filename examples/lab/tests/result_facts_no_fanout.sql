-- Every reportable (valid) LIMS result appears exactly once in assay.marts.result_facts.
-- Specification limits exist per product *and* analyte: joining on the analyte alone would
-- triple every row; dropping a sample or instrument would lose rows. Either way the counts differ.
with facts as (
    select count(*) as fact_rows, sum(f.result_value) as fact_total
    from assay.marts.result_facts as f
),
lims as (
    select count(*) as valid_results, sum(r.result_value) as valid_total
    from assay.staging.raw_results as r
    where r.result_status = 'valid'
)
select facts.fact_rows, lims.valid_results, facts.fact_total, lims.valid_total
from facts
cross join lims
where facts.fact_rows <> lims.valid_results
   or abs(facts.fact_total - lims.valid_total) > 1e-6
