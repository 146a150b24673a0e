select c.name
from raw.customers c
where exists (select 1 from raw.orders o where o.customer_id = c.id)
