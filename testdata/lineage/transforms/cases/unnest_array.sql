select unnest(make_array(id, customer_id)) as v from raw.orders
