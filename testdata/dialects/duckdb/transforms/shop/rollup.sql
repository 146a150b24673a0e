-- @table
-- Grouping sets, window aggregates over decimals and a UNION of aggregates: DuckDB's
-- grouping() is BIGINT, and its avg of a decimal is DOUBLE in a window and in every branch.
with priced as (
    select customer, qty, cast(amount as decimal(10, 2)) as amount from shop.orders
),
rolled as (
    select customer,
           grouping(customer) as is_total,
           sum(amount) as revenue,
           avg(sum(amount)) over () as mean_revenue
    from priced
    group by rollup (customer)
)
select customer, is_total, revenue, mean_revenue, 'rolled' as kind from rolled
union all
select customer, 0, sum(amount), avg(amount), 'branch' from priced group by customer
