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
	@for pom in java/*/pom.xml; do scripts/fetch-jars.sh $$(basename $$(dirname $$pom)) || exit 1; done

build:
	$(GO) build -o $(BIN) ./cmd/gait

# The main job (needs root): the quick limpbench suite on real ZooKeeper,
# etcd, Redis, gait-redis, Cassandra and HBase (on gait's HDFS) (several
# minutes), with its suite report of
# limplock verdicts beside the Limplock paper's Table 1; then the magical-1%
# analysis of the slow-leader experiments' runs and of the bundled Redis trace.
DEMO_REPORTS := $(OUT)/demo-bench.html $(OUT)/demo-analyze.html $(OUT)/demo-trace.html
demo: deps build
	@rm -rf $(OUT)/bench && mkdir -p $(OUT)
	$(BIN) bench --quick --out $(OUT)/bench --html $(OUT)/demo-bench.html
	$(BIN) analyze $(OUT)/bench/*leader-nic --html $(OUT)/demo-analyze.html > /dev/null
	$(BIN) analyze $(DEMO_TRACE) --html $(OUT)/demo-trace.html > /dev/null
	@echo "reports: $(abspath $(DEMO_REPORTS))"

vet:
	@test -z "$$(gofmt -l cmd internal)" || { echo "gofmt needed:"; gofmt -l cmd internal; exit 1; }
	$(GO) vet ./...

# One package at a time (-p 1): the limpware accuracy tests (a CPU share, a
# disk rate) measure this 2-core machine and must not compete with each other.
# -count=1: every test runs, none is taken from Go's cache, since most drive
# real servers whose behaviour no source file records.
# GAIT_BIN: tests that run gait as a command use the binary build just made,
# rather than each linking its own.
# The vendored raft is a module of its own, which ./... leaves out: its
# gait tests (of gait's changes to it) run next.
# Then each fuzz target of a parser of untrusted input runs briefly (its seed
# corpus in testdata/fuzz/ already ran as a plain test); a fuzz run takes one
# package and one target, and writes a failing input to that testdata/fuzz/.
# Each gets a count of inputs (about 5 s here), not a duration: Go 1.26's
# fuzz coordinator can fail a clean run with "context deadline exceeded"
# when a duration ends mid-input (golang/go#75804, fixed in Go 1.27).
test: deps build vet
	GAIT_BIN=$(abspath $(BIN)) $(GO) test -p 1 -count=1 -timeout 18m ./...
	$(GO) -C third_party/hashicorp-raft test -count=1 -timeout 2m -run '^TestGait' .
	$(GO) test -run '^$$' -fuzz '^FuzzCSV$$' -fuzztime 200000x ./internal/latency/
	$(GO) test -run '^$$' -fuzz '^FuzzHistogramLog$$' -fuzztime 200000x ./internal/latency/
	$(GO) test -run '^$$' -fuzz '^FuzzScenario$$' -fuzztime 20000x ./internal/bench/
	$(GO) test -run '^$$' -fuzz '^FuzzRESPRequest$$' -fuzztime 40000x ./internal/resp/
	$(GO) test -run '^$$' -fuzz '^FuzzRESPReply$$' -fuzztime 40000x ./internal/resp/
	$(GO) test -run '^$$' -fuzz '^FuzzRoundTrip$$' -fuzztime 300000x ./internal/tardis/
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeRequest$$' -fuzztime 200000x ./third_party/zkwire/
	$(GO) test -run '^$$' -fuzz '^FuzzInventory$$' -fuzztime 100000x ./internal/inventory/
	$(GO) test -run '^$$' -fuzz '^FuzzFrames$$' -fuzztime 100000x ./internal/agent/

# Benchmarks are not part of test: they are run on purpose, on a quiet machine.
bench: build
	$(GO) test -run '^$$' -bench . -benchmem ./internal/...

clean:
	rm -rf bin $(OUT)
