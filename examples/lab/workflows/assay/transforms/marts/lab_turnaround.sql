-- Turnaround per QC lab: hours from sample receipt to the last reportable result.
with per_sample as (
    select
        f.lab_site_code,
        f.sample_id,
        max(f.hours_from_receipt) as hours_to_complete
    from assay.marts.result_facts as f
    group by f.lab_site_code, f.sample_id
)
select
    s.site_code as lab_site_code,
    s.site_name as lab_name,
    s.region,
    count(p.sample_id) as samples,
    round(avg(p.hours_to_complete), 1) as avg_hours_to_complete,
    max(p.hours_to_complete) as max_hours_to_complete
from shared.sites as s
join per_sample as p on p.lab_site_code = s.site_code
group by s.site_code, s.site_name, s.region
