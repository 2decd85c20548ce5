# Targets for working on hitch. `make help` lists them.
.PHONY: help build release demo test race lint bench fuzz ci

# What a release build says of itself (`hitch version`).
VERSION    ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT     ?= $(shell git rev-parse HEAD 2>/dev/null)
BUILD_TIME ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS    := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.buildTime=$(BUILD_TIME)
# Static binaries: no cgo, file paths trimmed, the time zone database built in.
GOBUILD    := CGO_ENABLED=0 go build -trimpath -tags timetzdata -ldflags "$(LDFLAGS)"
PLATFORMS  := linux/amd64 linux/arm64 darwin/amd64 darwin/arm64

help: ## list the targets
	@grep -E '^[a-z]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-8s %s\n", $$1, $$2}'

build: ## the hitch binary as released (static, trimmed), in bin/hitch
	$(GOBUILD) -o bin/hitch ./cmd/hitch

release: ## archives for linux and darwin on amd64 and arm64, with SHA256SUMS, in dist/
	rm -rf dist && mkdir -p dist
	set -e; for p in $(PLATFORMS); do \
	  os=$${p%/*}; arch=$${p#*/}; name=hitch_$(VERSION)_$${os}_$${arch}; \
	  mkdir -p dist/$$name; \
	  GOOS=$$os GOARCH=$$arch $(GOBUILD) -o dist/$$name/hitch ./cmd/hitch; \
	  cp README.md dist/$$name/; \
	  tar -C dist --sort=name --owner=0 --group=0 --numeric-owner -czf dist/$$name.tar.gz $$name; \
	  rm -rf dist/$$name; \
	done
	cd dist && sha256sum hitch_*.tar.gz > SHA256SUMS
	@cat dist/SHA256SUMS

demo: ## run the offline demo end to end
	go run ./cmd/hitch demo

test: ## run the tests with the race detector (the README's command)
	go test -race ./...

race: ## run the tests with the race detector, three times over
	go test -race -count=3 ./...

lint: ## gofmt, go vet and staticcheck
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); exit 1)
	go vet ./...
	go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

bench: ## durable steps per second (see docs/benchmarks.md)
	go test -run '^$$' -bench . -count 5 ./bench/ ./store/sqlite/

fuzz: ## fuzz the edit tool briefly
	go test -run '^$$' -fuzz FuzzEdit -fuzztime 30s ./tool/builtin/

ci: ## what CI runs
	bash .ci/run
