-- @table
-- @key calendar_date
-- @tags reference,calendar
-- Day calendar for the reporting period (Q1 2024).
select
    cast(d.day as date) as calendar_date,
    cast(date_trunc('month', d.day) as date) as month_start,
    to_char(d.day, '%Y-%m') as year_month,
    cast(date_part('week', d.day) as int) as iso_week,
    to_char(d.day, '%A') as weekday_name,
    date_part('dow', d.day) in (0, 6) as is_weekend
from unnest(
    generate_series(timestamp '2024-01-01', timestamp '2024-03-31', interval '1 day')
) as d(day)
