# Zoea — every target works from a fresh clone. `make` lists them.
SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

GOBIN     := $(shell go env GOPATH)/bin
export PATH := $(GOBIN):$(PATH)
# The two Go modules: the root one holds everything that ships and its tools; deploy holds the checks of the
# deployment files (compose, Kubernetes, NATS config), whose Kubernetes and compose libraries nothing ships.
MODULES   := . deploy
SERVICES  := memory composer runner bus spacemolt-sim
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
# The timeout is a backstop for a hung package, not a speed limit: on a fresh machine (cold build cache; cmd/zoea's
# end-to-end tests build every service) shared with other work, cmd/zoea and pgstore passed 20 minutes while
# progressing (docs/benchmarks/2026-11-26-fresh-machine-and-load.md). Each test's own waits have their own deadlines.
TEST_FLAGS ?= -race -count=1 -timeout 45m
BENCH     ?= .
# Extra flags for zoea dev, e.g. DEV_FLAGS='--duration 5m --expect-earners 3' (make fresh-check uses that).
DEV_FLAGS ?=

.PHONY: help
help: ## List targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  \033[36m%-12s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: tools
tools: ## Install pinned code generators and linters (go install)
	./.ci/tools.sh

.PHONY: proto
proto: ## Format, lint and regenerate protobuf code into gen/go
	buf format -w
	buf lint
	buf generate

.PHONY: proto-check
proto-check: ## Fail if .proto files are unformatted, lint fails, generated code is stale, or a change breaks the wire
	buf format --diff --exit-code
	buf lint
	@tmp=$$(mktemp -d); trap 'rm -rf $$tmp' EXIT; \
	buf generate -o $$tmp; \
	if ! diff -r $$tmp/gen/go gen/go >/dev/null; then \
	  echo "gen/go is stale: run 'make proto' and commit the result"; diff -r $$tmp/gen/go gen/go | head -40; exit 1; \
	fi; echo "gen/go is up to date"
	@if git rev-parse -q --verify main >/dev/null && git cat-file -e main:buf.yaml 2>/dev/null; then \
	  buf breaking --against '.git#branch=main'; echo "no breaking changes against main"; \
	else echo "no protos on main yet: breaking check skipped"; fi

.PHONY: lint
lint: ## go vet + staticcheck + gofmt on every module
	@fail=0; for m in $(MODULES); do \
	  echo "== lint $$m"; \
	  (cd $$m && go vet ./... && staticcheck ./...) || fail=1; \
	done; \
	unformatted=$$(gofmt -l $$(git ls-files '*.go' | grep -v '^gen/')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; fail=1; fi; \
	exit $$fail

.PHONY: setup
setup: ## One-time machine set-up, run by dev and test: when PostgreSQL, role zoea, a JetStream NATS, gcc or tmux is missing, says so and runs .ci/services.sh (via sudo unless root)
	@./.ci/setup.sh

.PHONY: test
# go test -json through cmd/zoea/testprogress: each package's ok/FAIL line as it finishes, failing tests' output, every
# skipped test with its reason (as it happens and listed at the end), the long end-to-end tests' t.Log milestones as
# they happen and a line a minute naming what still runs; nothing per passing test; a closing count. pipefail
# (SHELLFLAGS) keeps go test's exit status.
test: setup ## Run every module's tests with -race (needs Postgres and NATS: the set-up step provides them)
	@go build -o bin/testprogress ./cmd/zoea/testprogress
	@fail=0; for m in $(MODULES); do \
	  echo "== test $$m"; \
	  (cd $$m && go test $(TEST_FLAGS) -json ./... | $(CURDIR)/bin/testprogress) || fail=1; \
	done; exit $$fail

.PHONY: fresh-check
fresh-check: ## As root: README's one line and make test on a debootstrapped Debian 12 in its own network namespace, timed per phase (docs/FRESH-CHECK.md)
	./.ci/fresh-check.sh

.PHONY: chaos
chaos: ## Fault suite on private ports: kill -9 of every service and NATS node (3-node R3 cluster), Postgres restarts, slow model; fails on any loss, unanswered call or stalled mysis. CHAOS_FLAGS="-postgres patroni": HA Postgres (Patroni, etcd, 2 sync replicas), the primary node killed twice (needs: apt-get install patroni etcd-server)
	go run ./services/runner/tools/cmd/chaos $(CHAOS_FLAGS)

# An hour by default; SOAK_FLAGS="-duration 10m" for a shorter look. Cache bounds are small on purpose (512 KiB of
# carried windows, 16,384 token counts) so 50 myses fill them early and the hour shows them staying at the bound.
SOAK_FLAGS ?=
.PHONY: soak
soak: ## Soak on private ports: the fault suite's stack and load without faults, 50 autopilot myses and 3 on a slow model for an hour; samples every process's RSS, goroutines and open files, every cache's fill and the Postgres connections each minute; fails on a cache over its bound, growth in the second half, or any loss
	go run ./services/runner/tools/cmd/chaos -soak -swarm 50 -broadcast-every 30s -huge=false $(SOAK_FLAGS)

.PHONY: build
# devnats is zoea dev's embedded JetStream fallback, a program of its own so that the zoea CLI links no nats-server.
# One go build of them all, through .ci/build.sh: "building: N of M packages compiled" every 5 s, as a first build
# (some 700 packages, many minutes) would otherwise print nothing until it ends.
build: ## Build every binary into bin/ (progress every 5 s)
	@mkdir -p bin
	@echo "== build $(SERVICES) zoea devnats"
	@./.ci/build.sh -trimpath -ldflags "-X main.version=$(VERSION)" -o bin/ $(foreach s,$(SERVICES),./services/$(s)/cmd/$(s)) ./cmd/zoea ./cmd/zoea/devnats

.PHONY: dev
dev: setup build ## Run a local swarm: every service on this machine, three autopilot myses, live progress (Ctrl-C stops)
	./bin/zoea dev --bin ./bin $(DEV_FLAGS)

COMMA := ,

.PHONY: bench
bench: ## Run Go benchmarks of every module (BENCH=regexp to filter); big-data runs are in docs/BENCHMARKS.md
	@for m in $(MODULES); do \
	  echo "== bench $$m"; \
	  (cd $$m && go test -run '^$$' -bench '$(BENCH)' -benchmem ./...); \
	done

.PHONY: bench-memory
bench-memory: ## Seed BENCH_DB (an empty database) and measure the memory service at scale (SEED_FLAGS, BENCH_FLAGS; see services/memory/README.md)
	@test -n "$(BENCH_DB)" || { echo "set BENCH_DB to an empty database's URL (createdb zoea_bench)"; exit 1; }
	go build -o bin/memorybench ./services/memory/tools/cmd/memorybench
	./bin/memorybench seed -db '$(BENCH_DB)' $(SEED_FLAGS)
	./bin/memorybench bench -db '$(BENCH_DB)' $(BENCH_FLAGS)

.PHONY: bench-recall
bench-recall: ## Search recall (docs/benchmarks/2026-12-02-search-v4.md): planted facts in generated histories, and LoCoMo when LOCOMO is a local copy's path (RECALL_FLAGS; BENCH_DB an empty database)
	@test -n "$(BENCH_DB)" || { echo "set BENCH_DB to an empty database's URL (createdb zoea_recall)"; exit 1; }
	cd services/memory/tools && go build -o ../../../bin/memorybench ./cmd/memorybench
	./bin/memorybench recall -db '$(BENCH_DB)' $(if $(LOCOMO),-locomo '$(LOCOMO)') $(or $(RECALL_FLAGS),-game 0$(COMMA)20000 -planted 1000$(COMMA)100000 -modes asked$(COMMA)or)

.PHONY: up
up: ## docker compose up (Postgres, NATS, migrations, every service)
	docker compose up -d

.PHONY: down
down: ## docker compose down
	docker compose down

.PHONY: k8s-check
k8s-check: ## As root: a single-node Kubernetes v1.34 built here (cached in /var/cache/zoea-k8s), the dev overlay applied and tried: Ready, credits, scale 1→3→1, rolling update, pod deletes, PDB, secrets, prod dry-run, teardown (docs/DEPLOY.md)
	./deploy/k8s/check/k8s-check.sh

.PHONY: compose-check
compose-check: ## docker compose on a real engine: build, up until 3 myses earn credits, the web console, kill -9 the runner, down/up, down -v (docs/DEPLOY.md)
	./deploy/docker/compose-check.sh

.PHONY: tidy
tidy: ## go mod tidy in every module
	@for m in $(MODULES); do echo "== tidy $$m"; (cd $$m && go mod tidy); done
