select o.id
from lab.orders o
where o.ordered_at > true
