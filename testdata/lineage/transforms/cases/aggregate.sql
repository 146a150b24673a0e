select customer_id, sum(amount) as total, count(*) as n
from raw.orders
group by customer_id
