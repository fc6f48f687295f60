module github.com/zoeaswarm/zoea/services/spacemolt-sim/tools

go 1.26.0

require (
	github.com/modelcontextprotocol/go-sdk v1.8.0
	github.com/tiktoken-go/tokenizer v0.10.0
	github.com/zoeaswarm/zoea/services/spacemolt-sim v0.0.0-00010101000000-000000000000
)

require (
	github.com/dlclark/regexp2/v2 v2.5.1 // indirect
	github.com/google/jsonschema-go v0.4.3 // indirect
	github.com/segmentio/asm v1.2.1 // indirect
	github.com/segmentio/encoding v0.5.4 // indirect
	github.com/yosida95/uritemplate/v3 v3.0.2 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/oauth2 v0.36.0 // indirect
	golang.org/x/sync v0.24.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/time v0.16.0 // indirect
	golang.org/x/tools v0.51.0 // indirect
)

replace (
	github.com/zoeaswarm/zoea/gen => ../../../gen
	github.com/zoeaswarm/zoea/libs => ../../../libs
	github.com/zoeaswarm/zoea/services/spacemolt-sim => ../
)
