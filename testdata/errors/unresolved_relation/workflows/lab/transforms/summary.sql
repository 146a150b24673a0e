select id, avg(result) as mean_result
from lab.reslts
group by id
