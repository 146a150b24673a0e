select *
from results
