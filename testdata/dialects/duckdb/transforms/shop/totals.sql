-- @table
-- Aggregates of integers and decimals, division of decimals: DuckDB's sum of an integer is
-- HUGEINT, of a DECIMAL(p, s) DECIMAL(38, s); its avg of a decimal and its `/` with a
-- decimal operand are DOUBLE.
select customer,
       sum(qty) as units,
       sum(cast(amount as decimal(10, 2))) as revenue,
       avg(cast(amount as decimal(10, 2))) as mean_amount,
       sum(cast(amount as decimal(10, 2))) / count(*) as per_order,
       max(cast(amount as decimal(10, 2))) / 4 as quarter_largest
from shop.orders
group by customer
