-- @table
-- NULL ordering in a window: DuckDB sorts NULLs last, descending too.
select id, note,
       row_number() over (order by note desc, id) as by_note_desc,
       row_number() over (order by note, id) as by_note
from shop.orders
