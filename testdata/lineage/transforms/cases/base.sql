-- @ephemeral
select id, customer_id, amount * 100 as cents from raw.orders
