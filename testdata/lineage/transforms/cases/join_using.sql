select customer_id, o.amount as order_amount, p.amount as paid_amount
from raw.orders o join raw.payments p using (customer_id)
