-- @table
select *
from (values (1, 'ox', 2.5), (2, 'cam', 3.5)) as t(sample_id, site, result)
