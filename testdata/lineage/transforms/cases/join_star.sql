-- SELECT * over a join: per-column lineage; the join keys are indirect inputs of every column.
select *
from raw.orders o
join (select id as cust_id, name, region from raw.customers) c on o.customer_id = c.cust_id
