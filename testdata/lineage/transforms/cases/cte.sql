with paid as (select * from raw.orders where status = 'paid')
select customer_id, amount from paid
