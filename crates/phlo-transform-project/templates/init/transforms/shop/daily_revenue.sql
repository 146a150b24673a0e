-- @key ordered_on
-- Revenue and orders per day: a view over shop.orders (the workspace's default
-- materialisation, phlo.toml).
select
    o.ordered_on,
    count(*) as orders,
    sum(o.amount) as revenue
from shop.orders as o
group by o.ordered_on
