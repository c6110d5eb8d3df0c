# jobscope — build, try and test.
#   make help   every target, one line each (the "## " comments on the target lines)
#   make demo   build and run jobscope on a bundled demo node (no Slurm needed)
#   make demo-report  the demo node, scraped by a throw-away Prometheus, then `jobscope report 100`
#   make test   unit, golden, fuzz-seed and privileged tests (root runs the privileged ones)
#   make test-race  the concurrent packages under the race detector, and concurrent scrapes of a -race binary
#   make e2e    real Slurm + real Prometheus end-to-end test (root; installs what it needs)
#   make vm-e2e jobscope as a systemd service in Debian 12, 13 and forky VMs (root; qemu)
#   make site-e2e  a three-VM Slurm site installed from the .deb (root; qemu)
#   make bench  scrape benchmarks on generated 128/512-job trees
#   make lint   golangci-lint with the repository's .golangci.yml
#   make fuzz   every fuzz target for FUZZTIME (20s) each
#   make test-adversarial  faults a node meets, each case asserting its outcome (docs/reliability.md)
#   make kernel-matrix  load and check the BPF programs on Debian's kernels 5.10-7.2 under qemu

GO        ?= go
# One version for the binary and the packages, from git describe.
ifndef VERSION
VERSION   := $(shell sh contrib/packaging/version.sh)
endif
REVISION  ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
LDFLAGS   := -s -w -X main.version=$(VERSION) -X main.revision=$(REVISION)
DEMO_ADDR ?= 127.0.0.1:10817
# Where the demo's live copy of testdata/demo goes (test/demo/livenode).
DEMO_ROOT ?= build/demo
BIN       := bin/jobscope
# The report's own binary: `jobscope report` runs the one next to $(BIN).
REPORT_BIN := bin/jobscope-report
# Pinned; go run fetches it through the module proxy like any dependency
# (the first run builds it, later ones use the build cache).
GOLANGCI_LINT ?= $(GO) run github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0
# go-nvml v0.13.4 wraps NVML functions that CUDA 13 deprecates: the warnings
# say nothing about jobscope, so they are kept out of every build's output.
CGO_CFLAGS ?= -O2 -g -Wno-deprecated-declarations
export CGO_CFLAGS

.PHONY: all help build build-static demo demo-report test test-race test-deps e2e vm-e2e bench bench-controller bench-bpf kernel-matrix generate emission-factors docs fuzz test-adversarial fmt vet lint clean gpu-bundle \
	package package-deps package-test package-test-deps site-e2e

all: build ## the default: build

# One line per target, from the "## " comment on its rule line
# (contrib/makefile_test.go checks that every .PHONY target has one).
help: ## list every target, one line each
	@awk '/^[a-zA-Z0-9_ -]+:.*## / { split($$0, r, ":.*## "); n = split(r[1], t, " "); \
		for (i = 1; i <= n; i++) printf "  %-18s %s\n", t[i], r[2] }' $(firstword $(MAKEFILE_LIST))

build: ## bin/jobscope (cgo, with GPU support) and bin/jobscope-report
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/jobscope
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(REPORT_BIN) ./cmd/jobscope-report

# Static binaries without cgo (and so without GPU support).
build-static: ## bin/jobscope-static (no cgo, no GPU support) and bin/jobscope-report-static
	CGO_ENABLED=0 $(GO) build -tags nogpu -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)-static ./cmd/jobscope
	CGO_ENABLED=0 $(GO) build -tags nogpu -trimpath -ldflags '$(LDFLAGS)' -o $(REPORT_BIN)-static ./cmd/jobscope-report

# The demo node is a live copy of testdata/demo in $(DEMO_ROOT), its counters
# kept moving by test/demo/livenode (so per-job energy is attributed).
demo: build ## build and run jobscope on a bundled demo node (no Slurm needed)
	@echo "jobscope demo node: open http://$(DEMO_ADDR)/metrics (Ctrl-C to stop)"
	GO='$(GO)' bash test/demo/node.sh $(DEMO_ROOT) $(BIN) $(DEMO_FLAGS)

DEMO_FLAGS = --web.listen-address=$(DEMO_ADDR) \
	--path.cgroupfs=$(DEMO_ROOT)/cgroup --path.procfs=$(DEMO_ROOT)/proc --path.sysfs=$(DEMO_ROOT)/sys \
	--slurm.job-props-dir=$(DEMO_ROOT)/props --slurm.node-metadata.squeue=false --collector.ebpf=false \
	--collector.power.ipmi=command --collector.power.ipmi-command="cat testdata/power/ipmi/demo.txt" --collector.power.emissions.country=FR \
	--gpu.backend=fake --gpu.fake-file=testdata/gpu/demo.json --gpu.job-mapping-dir=testdata/gpu/demo-mapping

# The demo node scraped every second by Debian's Prometheus (installed as
# root when missing) on 127.0.0.1, then `jobscope report` of one demo job
# with the shipped defaults; everything it started is stopped at the end.
DEMO_REPORT_JOB ?= 100
DEMO_PROM_ADDR  ?= 127.0.0.1:10890
demo-report: build ## the demo node scraped by a throw-away Prometheus, then a real `jobscope report`
	GO='$(GO)' DEMO_PROM_ADDR=$(DEMO_PROM_ADDR) bash test/demo/report.sh $(DEMO_REPORT_JOB) $(DEMO_ROOT) $(DEMO_ADDR) $(BIN) $(DEMO_FLAGS)

# Test tools: promtool (Debian's prometheus package) checks every golden;
# chromium opens the job report's HTML page. As root they are installed
# when missing; otherwise their checks are skipped with a log line (CI runs
# as root, so there they are required).
test-deps: ## install promtool and chromium for make test (root)
	@command -v promtool >/dev/null || { [ "$$(id -u)" = 0 ] && apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null; } || echo "note: promtool not installed (apt-get install prometheus as root): its checks are skipped"
	@command -v chromium >/dev/null || { [ "$$(id -u)" = 0 ] && apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null; } || echo "note: chromium not installed (apt-get install chromium as root): the report's browser test is skipped"

test: test-deps ## unit, golden, fuzz-seed and privileged tests (root runs the privileged ones)
	JOBSCOPE_REQUIRE_PROMTOOL=$$(command -v promtool >/dev/null && echo 1) JOBSCOPE_REQUIRE_CHROMIUM=$$(command -v chromium >/dev/null && echo 1) $(GO) test -count=1 ./...
	CGO_ENABLED=0 $(GO) build -tags nogpu -o /dev/null ./...
	$(GO) vet ./...

# The packages where goroutines share state: the collector framework and
# collectors (concurrent collectors, shared collections, per-job state),
# discovery (background squeue, metadata caches), the server (slots, idle
# release, shutdown), the pollers, Slurm command runner and cache, GPU and
# power readers, the report service. Left out: bpf (its tests load
# programs one at a time; the race detector adds nothing there) and the
# test tools. Then the binary itself, built with -race, under concurrent
# scrapes of the demo node: any "DATA RACE" in its stderr fails the case.
RACE_PKGS ?= ./collector/... ./discovery/... ./cmd/jobscope/ ./internal/poll/ ./cmd/jobscope-report/... ./internal/mungeauth/... ./internal/cmdrun/ ./internal/notify/ \
	./slurmcli/... ./gpu/... ./power/... ./cgroupfs/...
test-race: ## the concurrent packages under the race detector, and concurrent scrapes of a -race binary
	$(GO) test -race -count=1 $(RACE_PKGS)
	$(GO) build -race -o $(BIN)-race ./cmd/jobscope
	JOBSCOPE_BIN=$(CURDIR)/$(BIN)-race $(GO) test -count=1 -v -run '^TestRaceConcurrentScrapes$$' ./test/adversarial/

# Every fuzz target of the module, FUZZTIME each (test/fuzz/run.sh); a
# crasher lands in <package>/testdata/fuzz/ and plain go test replays it.
FUZZTIME ?= 20s
fuzz: ## every fuzz target for FUZZTIME (20s) each
	GO='$(GO)' FUZZTIME=$(FUZZTIME) bash test/fuzz/run.sh

# Faults a node meets, each case asserting its outcome (docs/reliability.md):
# bad and blocking files, vanishing jobs, Slurm commands that misbehave,
# hostile HTTP clients, job churn, SIGTERM mid-scrape. Root for the cases
# that need it (they skip otherwise; CI runs as root).
test-adversarial: build ## faults a node meets, each case asserting its outcome (docs/reliability.md)
	JOBSCOPE_BIN=$(CURDIR)/$(BIN) $(GO) test -count=1 -timeout 15m -v ./test/adversarial/

# .deb and .rpm for each of PKG_ARCHES into dist/: jobscope (cgo, GPU
# support) and jobscope-static (no cgo, no GPU support); nfpm comes from the
# Go module proxy (contrib/packaging/build.sh).
PKG_ARCHES ?= amd64 arm64
PKG_DEPS   := binutils gzip $(if $(filter arm64,$(PKG_ARCHES)),gcc-aarch64-linux-gnu libc6-dev-arm64-cross)
# The package test: rpm (Debian's), debootstrap, qemu-user (runs the arm64
# binaries), bpftool (pins a map for the purge to remove), curl, systemd-container
# (boots the chroot with systemd running), iproute2 (the report test's own
# network namespace), python3-debian (parses the copyright file).
PKG_TEST_DEPS := rpm debootstrap qemu-user bpftool curl systemd-container iproute2 python3-debian

package: package-deps ## .deb and .rpm of jobscope and jobscope-static for PKG_ARCHES into dist/
	VERSION='$(VERSION)' REVISION='$(REVISION)' GO='$(GO)' bash contrib/packaging/build.sh $(PKG_ARCHES)

# Checks every file of the packages in dist/ (make package first), then
# installs, upgrades and purges them in a Debian 12 chroot (root), and gets
# a job-end report from the installed .deb with Debian's prometheus.
package-test: package-test-deps ## check, install, upgrade and purge the packages in Debian 12; a job-end report (root)
	VERSION='$(VERSION)' GO='$(GO)' bash test/package/run.sh

package-deps package-test-deps: ## install the tools make package / make package-test need (root)
	@pkgs="$(if $(filter package-deps,$@),$(PKG_DEPS),$(PKG_TEST_DEPS))"; missing=; \
	for p in $$pkgs; do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	[ -z "$$missing" ] || { [ "$$(id -u)" = 0 ] && apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; } || \
		echo "note: missing$$missing (apt-get install them as root)"

e2e: build ## real Slurm + real Prometheus end-to-end test (root; installs what it needs)
	sudo -n true 2>/dev/null || [ "$$(id -u)" = 0 ]
	bash test/e2e/run.sh

# Three full Debian VMs under qemu (TCG), each a one-node Slurm with cgroup v2
# under systemd and jobscope installed as the README says: A bookworm (kernel
# 6.1, Slurm 22.05), B trixie (6.12, 24.11, slurmdbd), C forky (7.2, 26.05).
# Images are cached in /var/cache/jobscope-vm; logs and tables stay in
# /tmp/jobscope-vm. VMS="B" runs a subset.
vm-e2e: build ## jobscope as a systemd service in Debian 12, 13 and forky VMs (root; qemu)
	[ "$$(id -u)" = 0 ]
	bash test/vm/run.sh $(VMS)

# A whole site: ctl (slurmctld, slurmdbd, Prometheus, Alertmanager, the
# controller unit) and compute nodes c1, c2 (slurmd, the node unit), three
# forky VMs on a qemu-only network segment, everything of jobscope from the
# amd64 .deb; an MPI job across c1 and c2 among jobs of two users. Logs and
# tables stay in /tmp/jobscope-site.
# SITE_PACKAGE=no uses dist/ as make package left it (.ci/run, right after
# make package).
SITE_PACKAGE ?= yes
site-e2e: ## three-VM Slurm site installed from the .deb: MPI across nodes, Prometheus, report (root; qemu)
	[ "$$(id -u)" = 0 ]
	[ "$(SITE_PACKAGE)" = no ] || $(MAKE) package PKG_ARCHES=amd64
	bash test/site/run.sh

# In-process scrape benchmarks (cgroup and process collectors), then the real
# binary over HTTP on generated v2 and v1 nodes whose jobs hold real idle
# processes (test/bench/node): each shape's I/O floor, then the default
# node collectors (ebpf and gpu off) and the cgroup collector alone, for this
# tree's binary and for $(BENCH_BASE)'s, built from git in the same run.
# BENCH_SHAPES picks shapes (bin/benchnode -h lists them); BENCH_FLAGS adds
# benchnode flags (-gogc=50: the default configuration again under GOGC=50).
# Root: the floor reads the processes' /proc/<pid>/io.
BENCH_BASE   ?= main
BENCH_SHAPES ?= v2-128,v2-512,v1-128,v1-512,v2-256x1,v1-256x1,v2-4x64,v1-4x64
bench: build ## scrape benchmarks on generated 128/512-job trees, against BENCH_BASE
	$(GO) test -run '^$$' -bench 'Scrape' -benchmem -count 5 ./collector/cgroup/ ./collector/process/ | tee bench.out
	rm -rf build/bench-base && mkdir -p build/bench-base
	git archive $(BENCH_BASE) | tar -x -C build/bench-base
	cd build/bench-base && $(GO) build -trimpath -o ../../bin/jobscope-base ./cmd/jobscope
	$(GO) build -o bin/benchnode ./test/bench/node
	bin/benchnode -bin $(BIN) -base bin/jobscope-base -shapes $(BENCH_SHAPES) $(BENCH_FLAGS) | tee -a bench.out

# Controller mode at scale (docs/controller.md, docs/performance.md):
# simulated clusters from real 22.05 records (10,000 and 50,000 jobs on
# 2,000 nodes, 100,000 on 5,000), parsed and emitted in process (the
# benchmark to profile), then one table of the real binary over HTTP, in
# the default form (JSON) and in text: poll and CPU time, allocations per
# job, series, RSS and peak RSS, for this tree's binary and for
# $(BENCH_BASE)'s, built from git in the same run. About 8 minutes.
bench-controller: build ## controller mode at 10k/50k/100k jobs: one table, this tree beside BENCH_BASE
	TZ=UTC $(GO) test -run '^$$' -bench 'SlurmCluster' -benchmem -benchtime 3x -count 1 ./collector/cluster/ | tee bench-controller.out
	rm -rf build/ctl-base && mkdir -p build/ctl-base
	git archive $(BENCH_BASE) | tar -x -C build/ctl-base
	cd build/ctl-base && $(GO) build -trimpath -o ../../bin/jobscope-base ./cmd/jobscope
	$(GO) run ./test/bench/ctl -bins now=$(BIN),base=bin/jobscope-base | tee -a bench-controller.out

# ns per sched_switch event (kernel BPF stats) against an empty program, and
# perf bench sched pipe with and without jobscope (root).
bench-bpf: ## ns per sched_switch event, perf bench sched pipe with and without jobscope (root)
	JOBSCOPE_BENCH_BPF=1 $(GO) test ./bpf/ -run '^TestBenchBPF$$' -count=1 -v

# Boots Debian's kernels 5.10, 6.1 (also without BTF), 6.12 and 7.2 under
# qemu (TCG) with an initramfs holding test/kernels/vmcheck, checks this
# machine's kernel too, and prints the table docs/ebpf.md shows. Kernel
# packages and images are cached in $(KERNEL_WORK). Root (cgroups, BPF).
KERNEL_WORK ?= /var/tmp/jobscope-kernels
kernel-matrix: ## load and check the BPF programs on Debian's kernels 5.10-7.2 under qemu (root)
	[ "$$(id -u)" = 0 ]
	command -v qemu-system-x86_64 >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends qemu-system-x86 >/dev/null; }
	$(GO) run ./test/kernels/matrix -work $(KERNEL_WORK)

# The real-GPU harness (docs/gpu.md, "Verified on real hardware"): what a
# GPU machine needs to run `bash .gpurun/run.sh` as root. CI has no GPU.
gpu-bundle: build ## .gpurun/: the real-GPU harness for a GPU machine (docs/gpu.md)
	mkdir -p .gpurun
	CGO_ENABLED=0 $(GO) build -o .gpurun/gpucheck ./test/gpu/gpucheck
	$(GO) build -o .gpurun/nvmldump ./test/gpu/nvmldump
	cp $(BIN) test/gpu/gpuload.cu test/gpu/run.sh .gpurun/

generate: ## go generate: the BPF objects (bpf2go, needs clang)
	$(GO) generate ./...

# power/emissions_factors.csv from Our World in Data's energy dataset
# (docs/energy.md): OWID_CSV is owid-energy-data.csv from
# github.com/owid/energy-data; alpha-2 codes come from Debian's iso-codes.
OWID_CSV ?= owid-energy-data.csv
emission-factors: ## power/emissions_factors.csv from Our World in Data's OWID_CSV
	@dpkg -s iso-codes >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends iso-codes >/dev/null; }
	$(GO) run ./test/gen/factors -owid $(OWID_CSV) -source "$(OWID_SOURCE)" -o power/emissions_factors.csv

docs: ## regenerate docs/metrics.md from the code
	$(GO) test ./collector/registry/ -run TestMetricsDoc -update

fmt: ## gofmt every Go file
	gofmt -w $$(git ls-files '*.go')

vet: ## go vet ./...
	$(GO) vet ./...

lint: ## golangci-lint with the repository's .golangci.yml
	$(GOLANGCI_LINT) run ./...

clean: ## remove bin, build, dist and the benchmarks' output
	rm -rf bin bench.out bench-controller.out .gpurun build dist
