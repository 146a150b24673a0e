select customer_id, sum(amount) as total
from shop.orders
group by customer_id
