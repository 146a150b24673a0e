-- @table
-- @key day
select day, count(*) as n, sum(amount) as total
from shop.orders_clean
group by day
