module example.com/markers

go 1.20
