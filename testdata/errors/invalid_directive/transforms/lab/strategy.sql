-- @incremental sideways
select 1 as id
