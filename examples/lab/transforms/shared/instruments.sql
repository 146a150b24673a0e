-- @key instrument_id
-- Instruments with their site and calibration status as of the reporting date (2024-03-31).
select
    i.instrument_id,
    i.instrument_type,
    i.vendor,
    i.site_code,
    s.site_name,
    s.region,
    cast(i.installed_on as date) as installed_on,
    cast(i.last_calibrated_on as date) as last_calibrated_on,
    cast(i.last_calibrated_on as date) + i.calibration_interval_days as calibration_due_on,
    cast(i.last_calibrated_on as date) + i.calibration_interval_days < date '2024-03-31' as calibration_overdue
from ref.instruments as i
join shared.sites as s on s.site_code = i.site_code
