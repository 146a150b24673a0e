-- @table
select *
from (values (1, 2.5), (2, 30.0)) as t(order_id, amount)
