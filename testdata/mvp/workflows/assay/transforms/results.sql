select *
from assay.raw
