select name from raw.customers
where id in (select customer_id from raw.orders where status = 'paid')
