// Package bpf holds jobscope's CO-RE eBPF programs (jobscope.bpf.c), the
// bpf2go output built from them, the loader that attaches them and pins their
// maps, and the reader that sums the per-CPU counters.
package bpf

// The generated .go and .o files are committed: `go build` needs no clang.
// Regenerate with `make generate` (or `go generate ./bpf/`), which needs
// clang, llvm-strip and libbpf-dev. -mcpu=v3: v1 rejects using the result of
// an atomic add. headers/vmlinux.h is x86_64's; the programs only touch
// CO-RE-relocated fields and tracepoint arguments, so arm64 builds from it too.
//go:generate go tool bpf2go -tags linux -cc clang -cflags "-O2 -g -Wall -Werror -mcpu=v3" -target amd64,arm64 -type job_key -type counters jobscope jobscope.bpf.c -- -I../headers
//go:generate go tool bpf2go -tags linux -cc clang -cflags "-O2 -g -Wall -Werror -mcpu=v3" -target amd64,arm64 bench bench/empty.bpf.c -- -I../headers
//go:generate sh -c "clang --version | head -n 1 > clang-version.txt"
