-- A released batch has a reportable, in-specification result for each of the four release
-- analytes and no out-of-specification result. Checked against result_facts directly, not
-- against the batch_quality aggregate the release decision was made from.
select
    r.batch_id,
    r.release_decision,
    count(distinct case when f.in_spec then f.analyte end) as analytes_in_spec,
    sum(case when f.in_spec = false then 1 else 0 end) as out_of_spec_results
from manufacturing.batch_release as r
left join assay.marts.result_facts as f on f.batch_id = r.batch_id
where r.release_decision = 'released'
group by r.batch_id, r.release_decision
having count(distinct case when f.in_spec then f.analyte end) < 4
    or sum(case when f.in_spec = false then 1 else 0 end) > 0
