-- A correlated scalar subquery in the projection.
select c.id,
       (select sum(o.amount) from raw.orders o where o.customer_id = c.id) as total
from raw.customers c
