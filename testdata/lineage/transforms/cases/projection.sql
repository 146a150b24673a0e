-- Identity and computed columns.
select id, amount * 2 as double_amount, upper(status) as status_uc, 1 as one
from raw.orders
