module github.com/zoeaswarm/zoea/services/bus

go 1.26.0

require (
	github.com/zoeaswarm/zoea/libs v0.0.0-00010101000000-000000000000
	github.com/zoeaswarm/zoea/gen v0.0.0-00010101000000-000000000000
)

replace (
	github.com/zoeaswarm/zoea/libs => ../../libs
	github.com/zoeaswarm/zoea/gen => ../../gen
)
