-- Every day has a positive total.
select * from shop.daily where total <= 0
