select id,
       row_number() over (partition by customer_id order by ordered_at) as rn,
       sum(amount) over (partition by customer_id) as customer_total
from raw.orders
