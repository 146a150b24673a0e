-- @table
-- @key site_code,month_start
-- @tags manufacturing,kpi
-- Output and yield per plant and month of completion.
select
    c.month_start,
    c.year_month,
    cb.site_code,
    s.site_name,
    count(*) as batches_completed,
    sum(cb.planned_kg) as planned_kg,
    sum(cb.yield_kg) as yield_kg,
    round(sum(cb.yield_kg) / sum(cb.planned_kg), 4) as yield_ratio,
    round(avg(cb.cycle_hours), 1) as avg_cycle_hours
from manufacturing.completed_batches as cb
join shared.calendar as c on c.calendar_date = cb.completed_on
join shared.sites as s on s.site_code = cb.site_code
group by c.month_start, c.year_month, cb.site_code, s.site_name
