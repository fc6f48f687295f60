module github.com/zoeaswarm/zoea/gen

go 1.26.0
