select id
from lab.orders
where id in (select ordered_at from lab.orders)
