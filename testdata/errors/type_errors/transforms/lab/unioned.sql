select site from lab.results
union all
select site, result from lab.results
