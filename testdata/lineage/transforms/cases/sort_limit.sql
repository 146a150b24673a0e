select distinct customer_id from raw.orders order by customer_id limit 10
