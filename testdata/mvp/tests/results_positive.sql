-- Every assay result is a positive concentration.
select *
from assay.results
where result <= 0
