select experiment_id,
       result
from lab.samples
where result >
