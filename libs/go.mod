module github.com/zoeaswarm/zoea/libs

go 1.26.0
