module github.com/zoeaswarm/zoea/services/composer

go 1.26.0

require (
	github.com/zoeaswarm/zoea/gen v0.0.0-00010101000000-000000000000
	github.com/zoeaswarm/zoea/libs v0.0.0-00010101000000-000000000000
)

require (
	github.com/dlclark/regexp2/v2 v2.5.1 // indirect
	github.com/tiktoken-go/tokenizer v0.10.0 // indirect
)

replace (
	github.com/zoeaswarm/zoea/gen => ../../gen
	github.com/zoeaswarm/zoea/libs => ../../libs
)
