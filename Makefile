# kvtier: two commands matter. `make bench` runs every suite on whatever
# this machine has, each in its shortest meaningful configuration (about
# 6 minutes on 2 cores; `make bench FULL=1` for the full sweeps), and
# writes CSV, manifests, plots, REPORT.md and REPORT.html under results/;
# `make test` runs vet and the tests.

GO      ?= go
BIN     := bin/kvtier
OUT     ?= results/$(shell date -u +%Y%m%dT%H%M%SZ)
# The toolchain's VCS stamp is off where GOFLAGS=-buildvcs=false; stamp the
# revision ourselves so every manifest names the code that measured.
REV     := $(shell git rev-parse HEAD 2>/dev/null)$(shell git diff --quiet HEAD 2>/dev/null || echo +dirty)
LDFLAGS := -X github.com/kvtier/kvtier/harness.revision=$(REV)

.PHONY: all build deps bench test test-rdma test-servers vet lint clean

all: build

deps:
	@scripts/deps.sh build

build: deps
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/kvtier

bench: build
	FULL=$(FULL) scripts/bench.sh $(BIN) $(OUT)

vet:
	$(GO) vet ./...

# Every parser of outside input is fuzzed for a count of inputs, about
# 30 s in all here: a count, not a time, since Go 1.26's fuzzer can fail
# a target with a bare "context deadline exceeded" when -fuzztime's
# clock runs out while a worker is busy (golang/go#75804, fixed in 1.27),
# which make test hit once on a quiet machine.
# The last steps run what the race detector would slow past its checks
# (under it those tests skip themselves): one MB1 cell against the
# simulator in real time (about 8 s; it skips, saying what it measured,
# where the machine did not keep pace: docs/testing.md); replay's fidelity to the trace
# model and the reference's knee on embedded simulators, in virtual time
# (about 3 s); the knee with kvtier sim started through --server-cmd,
# in real time at a tenth of the modeled delays (about 11 s); SHARDS at
# a 1 % sample against the exact curve (about 1 s).
test: 
	@scripts/deps.sh test
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 12m ./...
	$(GO) test -run NONE -fuzz FuzzMooncakeTrace -fuzztime 20000x ./workload
	$(GO) test -run NONE -fuzz FuzzAlibabaTrace -fuzztime 10000x ./workload
	$(GO) test -run NONE -fuzz FuzzDecoder -fuzztime 60000x ./workload
	$(GO) test -run NONE -fuzz FuzzExpandHostlist -fuzztime 5000x ./harness/mesh
	$(GO) test -run NONE -fuzz FuzzReadStream -fuzztime 10000x ./serving
	$(GO) test -run NONE -fuzz FuzzParseMetrics -fuzztime 10000x ./serving
	$(GO) test -run NONE -fuzz FuzzParse -fuzztime 20000x ./units
	$(GO) test -run NONE -fuzz FuzzParseConfig -fuzztime 50000x ./kv
	$(GO) test -run NONE -fuzz FuzzParseTable -fuzztime 40000x ./results
	$(GO) test -run NONE -fuzz FuzzReadFrame -fuzztime 15000x ./peer
	$(GO) test -run NONE -fuzz FuzzTokenize -fuzztime 8000x ./vllmsim
	$(GO) test -count=1 -run TestSimMB1RealTime ./harness/mb1
	$(GO) test -count=1 -run 'TestReplayMatchesTracePrediction|TestKneeEmbeddedReference|TestKneeExternalSimShape' ./replayer ./harness/knee ./cmd/kvtier
	$(GO) test -count=1 -run 'TestShardsOneInAHundred' ./workload

# Checks beyond vet, for contributors (not part of make test: they fetch
# and build their tools, minutes on 2 cores): staticcheck, deadcode (no
# function unreachable from a main or a test), and Go's modernize
# analyzers (less "any", which trips on cgo's generated code, and
# "stringsbuilder", which rewrites short += loops into longer code). Each
# must print nothing.
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
DEADCODE    := golang.org/x/tools/cmd/deadcode@v0.52.0
MODERNIZE   := golang.org/x/tools/go/analysis/passes/modernize/cmd/modernize@v0.52.0
lint: vet
	$(GO) run $(STATICCHECK) -tests ./...
	@out=$$($(GO) run $(DEADCODE) -test ./...); if [ -n "$$out" ]; then echo "$$out"; exit 1; fi
	$(GO) run $(MODERNIZE) -test -any=false -stringsbuilder=false ./...

# The soft-RoCE VM (rdmavm.TestSoftRoCE, built only with -tags rdmavm):
# about 2 minutes alone on 2 cores under qemu's TCG, kept out of make
# test, where it starved beside the race-instrumented packages. Fails when
# the VM or a case fails; skips, saying why, without root or qemu. The
# VM's kvtier is built with -tags kvtier_testfaults: its fault cases set
# KVTIER_TEST_* switches the shipped binary does not read.
test-rdma: deps
	$(GO) test -tags rdmavm -count=1 -v -timeout 25m -run TestSoftRoCE ./rdmavm

# kvtier's HTTP suites against a real server: Ollama v0.6.8 on the CPU,
# built from its Go module once per machine (about 2 minutes on 2 cores,
# cached under ~/.cache/kvtier), serving a tiny random-weight LLaMA the
# tests write (about 3 minutes). Skips with exit 0 when Ollama cannot be
# built here (docs/testing.md).
test-servers: build
	scripts/test-servers.sh -b $(BIN)

clean:
	rm -rf bin
