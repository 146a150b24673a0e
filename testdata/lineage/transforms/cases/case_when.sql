select id, case when status = 'paid' then amount else 0 end as paid_amount
from raw.orders
