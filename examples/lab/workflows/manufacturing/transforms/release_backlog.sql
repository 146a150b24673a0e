-- @view
-- Completed batches still waiting for a QC verdict, oldest first (as of 2024-03-31).
select
    r.batch_id,
    r.product_code,
    r.site_name,
    r.lab_site_code,
    r.analytes_tested,
    r.completed_at,
    date '2024-03-31' - cast(r.completed_at as date) as days_waiting
from manufacturing.batch_release as r
where r.release_decision = 'pending_qc'
order by r.completed_at
