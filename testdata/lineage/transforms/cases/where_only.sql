-- `status` is used only in WHERE: an indirect (filter) input of every column.
select id, amount from raw.orders where status = 'paid'
