# Targets for working on hitch. `make help` lists them.
.PHONY: help demo test race lint bench fuzz ci

help: ## list the targets
	@grep -E '^[a-z]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-8s %s\n", $$1, $$2}'

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
