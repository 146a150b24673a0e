-- @table
-- @key batch_id
-- @owner qa-release
-- @tags manufacturing,release,gxp
-- Release decision for every batch: QC verdict (assay marts) joined to the batch and its plant.
select
    b.batch_id,
    b.product_code,
    b.site_code,
    s.site_name,
    s.region,
    b.status as batch_status,
    b.completed_at,
    q.lab_site_code,
    coalesce(q.analytes_tested, 0) as analytes_tested,
    coalesce(q.out_of_spec_results, 0) as out_of_spec_results,
    q.out_of_spec_analytes,
    q.last_measured_at,
    case
        when b.status = 'aborted' then 'not_applicable'
        when b.status <> 'completed' then 'in_production'
        when q.out_of_spec_results > 0 then 'rejected'
        when q.analytes_tested = 4 then 'released'
        else 'pending_qc'
    end as release_decision
from manufacturing.batches as b
join shared.sites as s on s.site_code = b.site_code
left join assay.marts.batch_quality as q on q.batch_id = b.batch_id
