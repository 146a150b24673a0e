-- @table
-- @view
select 1 as id
