select *
from raw.orders
