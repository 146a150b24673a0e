-- @table
-- @key experiment_id
-- @not-null sample_id
select *
from (
    values
        ('exp-001', 'S-01', 'oxford', 4.25),
        ('exp-002', 'S-02', 'oxford', 3.80),
        ('exp-003', 'S-03', 'cambridge', 5.10),
        ('exp-004', 'S-04', 'cambridge', 4.95)
) as t(experiment_id, sample_id, site, result)
