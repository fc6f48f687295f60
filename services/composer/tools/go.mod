module github.com/zoeaswarm/zoea/services/composer/tools

go 1.26.0

require (
	github.com/zoeaswarm/zoea/gen v0.0.0-00010101000000-000000000000
	github.com/zoeaswarm/zoea/libs v0.0.0-00010101000000-000000000000
	github.com/zoeaswarm/zoea/services/composer v0.0.0-00010101000000-000000000000
	google.golang.org/grpc v1.85.0
)

require (
	github.com/caarlos0/env/v11 v11.4.2 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/dlclark/regexp2/v2 v2.5.1 // indirect
	github.com/go-logr/logr v1.4.4 // indirect
	github.com/go-logr/stdr v1.2.2 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/grpc-ecosystem/go-grpc-middleware/v2 v2.3.4 // indirect
	github.com/maypok86/otter/v2 v2.4.0 // indirect
	github.com/tiktoken-go/tokenizer v0.10.0 // indirect
	github.com/zoeaswarm/zoea/libs/testsupport v0.0.0-00010101000000-000000000000
	go.opentelemetry.io/auto/sdk v1.2.1 // indirect
	go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc v0.72.0 // indirect
	go.opentelemetry.io/otel v1.47.0 // indirect
	go.opentelemetry.io/otel/log v1.47.0 // indirect
	go.opentelemetry.io/otel/metric v1.47.0 // indirect
	go.opentelemetry.io/otel/trace v1.47.0 // indirect
	golang.org/x/net v0.60.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/text v0.43.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20261019180522-ce908d29299b // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)

replace (
	github.com/zoeaswarm/zoea/gen => ../../../gen
	github.com/zoeaswarm/zoea/libs => ../../../libs
	github.com/zoeaswarm/zoea/services/composer => ../
)

replace github.com/zoeaswarm/zoea/libs/testsupport => ../../../libs/testsupport
