-- @table
select customer, count(*) as orders, max(amount) as largest, min(ordered_at) as first_order
from shop.orders
group by customer
