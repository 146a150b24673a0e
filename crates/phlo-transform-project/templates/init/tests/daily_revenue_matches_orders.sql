-- Every order is counted once in shop.daily_revenue: its totals equal those of shop.orders.
-- A test is a query whose rows are violations; no rows means it passes.
with days as (
    select sum(d.orders) as orders, sum(d.revenue) as revenue
    from shop.daily_revenue as d
),
orders as (
    select count(*) as orders, sum(o.amount) as revenue
    from shop.orders as o
)
select days.orders, orders.orders as expected_orders, days.revenue, orders.revenue as expected_revenue
from days
cross join orders
where days.orders <> orders.orders
   or days.revenue <> orders.revenue
