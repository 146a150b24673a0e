select * from lab.typo
