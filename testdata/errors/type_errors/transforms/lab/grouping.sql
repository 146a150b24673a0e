select site, result, count(*) as n
from lab.results
group by site
