-- Reads the ephemeral model `base`: lineage goes through its columns.
select customer_id, sum(cents) as total_cents from cases.base group by customer_id
