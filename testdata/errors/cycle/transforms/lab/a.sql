select * from lab.b
