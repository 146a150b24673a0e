select customer_id from raw.orders
except
select customer_id from raw.payments
