select 2 as id
