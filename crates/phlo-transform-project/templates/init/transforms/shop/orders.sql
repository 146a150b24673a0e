-- @table
-- @key order_id
-- @not-null ordered_on,amount
-- Orders from the raw export (sources/raw/orders.csv), typed, without the cancelled ones.
select
    o.order_id,
    o.customer,
    cast(o.ordered_at as date) as ordered_on,
    cast(o.amount as decimal(10, 2)) as amount
from raw.orders as o
where o.status <> 'cancelled'
