-- @table
-- @key site_code
-- One row per site (labs, plants and campuses that are both).
select
    s.site_code,
    s.site_name,
    s.country,
    s.region,
    s.site_type,
    s.site_type in ('lab', 'campus') as has_qc_lab,
    s.site_type in ('plant', 'campus') as has_manufacturing,
    cast(s.opened_on as date) as opened_on,
    s.active
from ref.sites as s
