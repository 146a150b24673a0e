-- @table
-- extract/date_part: BIGINT in DuckDB.
select id,
       extract(year from ordered_at) as y,
       date_part('month', ordered_at) as m,
       extract(day from ordered_at) as d
from shop.orders
