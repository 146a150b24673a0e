select sample_id
from lab.results
where site > 3 and sqrtt(result) > 1
