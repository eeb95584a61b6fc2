module example.com/procmem

go 1.22
