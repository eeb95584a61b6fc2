module example.com/fixtures

go 1.25
