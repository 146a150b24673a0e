-- @key sample_id
-- @not-null batch_id,product_code,lab_site_code
-- Release samples logged in the LIMS, one per manufactured batch.
select
    s.sample_id,
    s.batch_id,
    s.product_code,
    s.lab_site_code,
    s.sample_type,
    cast(s.collected_at as timestamp) as collected_at,
    cast(s.received_at as timestamp) as received_at
from lims.samples as s
