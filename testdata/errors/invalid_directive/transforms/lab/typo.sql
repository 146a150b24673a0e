-- @tabel
-- @key id
select 1 as id
