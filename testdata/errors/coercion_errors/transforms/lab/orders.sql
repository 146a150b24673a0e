-- @table
select *
from (values (1, date '2024-01-01', 2.5), (2, date '2024-02-01', 30.0)) as t(id, ordered_at, amount)
