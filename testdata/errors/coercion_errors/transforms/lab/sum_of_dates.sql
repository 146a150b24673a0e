select id,
       sum(ordered_at) as total
from lab.orders
group by id
