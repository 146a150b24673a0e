select id, amount from raw.orders
union all
select id, amount from raw.payments
