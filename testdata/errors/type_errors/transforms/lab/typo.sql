select sample_id,
       reslt * 2 as doubled
from lab.results
