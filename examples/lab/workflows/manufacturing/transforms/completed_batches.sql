-- @ephemeral
-- Completed batches only, with the day they finished (inlined into its consumers).
select
    b.batch_id,
    b.product_code,
    b.site_code,
    b.planned_kg,
    b.yield_kg,
    b.yield_ratio,
    b.completed_at,
    cast(b.completed_at as date) as completed_on,
    extract(epoch from (b.completed_at - b.started_at)) / 3600.0 as cycle_hours
from manufacturing.batches as b
where b.status = 'completed'
