select *
from lab.a
