select sample_id
from lab.results
where site > 3 and nosuchfn(result) > 1
