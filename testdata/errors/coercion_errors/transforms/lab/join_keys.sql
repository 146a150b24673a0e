-- @view
select o.id, p.amount
from lab.orders o
join lab.payments p
  on o.ordered_at = p.amount
