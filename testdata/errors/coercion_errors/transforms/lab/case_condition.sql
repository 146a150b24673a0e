select o.id,
       case when o.amount then 'large' else 'small' end as size
from lab.orders o
