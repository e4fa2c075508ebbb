# make demo: install what is missing, build, run gait's main job.
# make test: install what is missing, run the whole suite.
GO       ?= go
BIN      := bin/gait
OUT      := out
DEMO_TRACE := testdata/traces/redis-loopback.csv

.PHONY: all deps build demo test vet bench clean

all: build

deps:
	@scripts/install-deps.sh

build:
	$(GO) build -o $(BIN) ./cmd/gait

demo: deps build
	@mkdir -p $(OUT)
	$(BIN) analyze $(DEMO_TRACE) --html $(OUT)/demo-report.html
	@echo "report: $(abspath $(OUT)/demo-report.html)"

vet:
	@test -z "$$(gofmt -l cmd internal)" || { echo "gofmt needed:"; gofmt -l cmd internal; exit 1; }
	$(GO) vet ./...

test: deps build vet
	$(GO) test -timeout 18m ./...

# Benchmarks are not part of test: they are run on purpose, on a quiet machine.
bench: build
	$(GO) test -run '^$$' -bench . -benchmem ./internal/...

clean:
	rm -rf bin $(OUT)
