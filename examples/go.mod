module github.com/nettrap/nettrap/examples

go 1.25
