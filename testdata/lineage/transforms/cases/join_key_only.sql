-- c.id is used only as a join key.
select o.id, c.name from raw.orders o left join raw.customers c on o.customer_id = c.id
