-- @key product_code,analyte
-- Release specification limits per product and analyte.
select
    sp.product_code,
    sp.analyte,
    sp.unit,
    sp.lower_limit,
    sp.upper_limit
from ref.specs as sp
