-- @incremental key=id
select id, day, amount from shop.orders
