-- Paid orders.
select id, customer_id, amount
from raw.orders
where status = 'paid'
