# jobscope — build, try and test.
#   make demo   build and run jobscope on a bundled demo node (no Slurm needed)
#   make test   unit, golden, fuzz-seed and privileged tests (root runs the privileged ones)
#   make e2e    real Slurm + real Prometheus end-to-end test (root; installs what it needs)
#   make vm-e2e jobscope as a systemd service in Debian 12, 13 and forky VMs (root; qemu)
#   make bench  scrape benchmarks on generated 128/512-job trees

GO        ?= go
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
REVISION  ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
LDFLAGS   := -s -w -X main.version=$(VERSION) -X main.revision=$(REVISION)
DEMO_ADDR ?= 127.0.0.1:10817
BIN       := bin/jobscope

.PHONY: all build build-static demo test test-deps e2e vm-e2e bench bench-bpf generate docs fmt vet clean

all: build

build:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/jobscope

# A static binary without cgo (and so without GPU support).
build-static:
	CGO_ENABLED=0 $(GO) build -tags nogpu -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)-static ./cmd/jobscope

demo: build
	@echo "jobscope demo node: open http://$(DEMO_ADDR)/metrics (Ctrl-C to stop)"
	$(BIN) $(DEMO_FLAGS)

DEMO_FLAGS = --web.listen-address=$(DEMO_ADDR) \
	--path.cgroupfs=testdata/demo/cgroup --path.procfs=testdata/demo/proc --path.sysfs=testdata/demo/sys \
	--slurm.job-props-dir=testdata/demo/props --slurm.scontrol-fallback=false --collector.ebpf=false \
	--power.ipmi=command --power.ipmi-command="cat testdata/power/ipmi/good.txt" --power.emissions.country=FR \
	--gpu.backend=fake --gpu.fake-file=testdata/gpu/demo.json --gpu.job-mapping-dir=testdata/gpu/demo-mapping

# Test tools: promtool (Debian's prometheus package) checks every golden.
# As root it is installed when missing; otherwise the promtool checks are
# skipped with a log line (CI runs as root, so there they are required).
test-deps:
	@command -v promtool >/dev/null || { [ "$$(id -u)" = 0 ] && apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null; } || echo "note: promtool not installed (apt-get install prometheus as root): its checks are skipped"

test: test-deps
	JOBSCOPE_REQUIRE_PROMTOOL=$(shell command -v promtool >/dev/null && echo 1) $(GO) test -count=1 ./...
	CGO_ENABLED=0 $(GO) build -tags nogpu -o /dev/null ./...
	$(GO) vet ./...

e2e: build
	sudo -n true 2>/dev/null || [ "$$(id -u)" = 0 ]
	bash test/e2e/run.sh

# Three full Debian VMs under qemu (TCG), each a one-node Slurm with cgroup v2
# under systemd and jobscope installed as the README says: A bookworm (kernel
# 6.1, Slurm 22.05), B trixie (6.12, 24.11, slurmdbd), C forky (7.2, 26.05).
# Images are cached in /var/cache/jobscope-vm; logs and tables stay in
# /tmp/jobscope-vm. VMS="B" runs a subset.
vm-e2e: build
	[ "$$(id -u)" = 0 ]
	bash test/vm/run.sh $(VMS)

# In-process scrape benchmarks (cgroup and process collectors), then the real
# binary over HTTP: all default node collectors but ebpf, and the cgroup
# collector alone.
bench: build
	$(GO) test -run '^$$' -bench 'Scrape' -benchmem -count 5 ./collector/ | tee bench.out
	$(GO) run ./internal/benchrss -jobs 128,512
	$(GO) run ./internal/benchrss -jobs 128,512 -flags "--collector.process=false --collector.gpu=false --collector.power=false"

# ns per sched_switch event (kernel BPF stats) against an empty program, and
# perf bench sched pipe with and without jobscope (root).
bench-bpf:
	JOBSCOPE_BENCH_BPF=1 $(GO) test ./bpf/ -run '^TestBenchBPF$$' -count=1 -v

generate:
	$(GO) generate ./...

docs:
	$(GO) test ./collector/ -run TestMetricsDoc -update

fmt:
	gofmt -w $$(git ls-files '*.go')

vet:
	$(GO) vet ./...

clean:
	rm -rf bin bench.out
