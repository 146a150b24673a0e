select 1 as experiment_id, 2.5 as result
