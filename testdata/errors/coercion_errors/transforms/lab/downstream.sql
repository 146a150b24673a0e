select * from lab.join_keys
