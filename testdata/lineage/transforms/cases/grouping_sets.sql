select customer_id, status, sum(amount) as total
from raw.orders
group by rollup (customer_id, status)
