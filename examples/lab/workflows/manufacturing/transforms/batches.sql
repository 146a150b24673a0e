-- @key batch_id
-- Batches from the MES, typed and with their yield.
select
    b.batch_id,
    b.product_code,
    b.site_code,
    b.status,
    cast(b.started_at as timestamp) as started_at,
    cast(b.completed_at as timestamp) as completed_at,
    b.planned_kg,
    b.yield_kg,
    case when b.status = 'completed' then round(b.yield_kg / b.planned_kg, 4) end as yield_ratio
from mes.batches as b
