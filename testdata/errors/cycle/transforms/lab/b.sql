select * from lab.c
