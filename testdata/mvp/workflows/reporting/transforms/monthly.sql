select *
from assay.results
