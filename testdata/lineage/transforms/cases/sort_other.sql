-- Ordered by a column that is not selected.
select customer_id from raw.orders order by amount desc limit 5
