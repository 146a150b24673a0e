-- @table
-- Integer division: DuckDB's `/` on integers is DOUBLE.
select id, qty / 2 as half, id / qty as per_qty, amount / 2 as half_amount
from shop.orders
