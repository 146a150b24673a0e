-- @materialised view
-- Orders with a positive amount.
select id, day, amount from shop.orders where amount > 0
