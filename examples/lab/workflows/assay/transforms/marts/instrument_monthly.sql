-- @key instrument_id,month_start
-- Results per instrument and month, including idle instruments (zero rows become zeros).
with months as (
    select
        c.month_start,
        count(*) as days_in_month,
        sum(case when c.is_weekend then 0 else 1 end) as working_days
    from shared.calendar as c
    group by c.month_start
),
usage as (
    select
        f.instrument_id,
        cast(date_trunc('month', f.measured_on) as date) as month_start,
        count(*) as results,
        count(distinct f.sample_id) as samples
    from assay.marts.result_facts as f
    group by f.instrument_id, cast(date_trunc('month', f.measured_on) as date)
)
select
    i.instrument_id,
    i.instrument_type,
    i.site_code,
    m.month_start,
    m.working_days,
    coalesce(u.results, 0) as results,
    coalesce(u.samples, 0) as samples,
    round(coalesce(u.results, 0) * 1.0 / m.working_days, 2) as results_per_working_day,
    i.calibration_overdue
from shared.instruments as i
cross join months as m
left join usage as u
    on u.instrument_id = i.instrument_id
   and u.month_start = m.month_start
