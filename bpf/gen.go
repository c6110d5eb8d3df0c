// SPDX-License-Identifier: Apache-2.0

// Package bpf holds jobscope's CO-RE eBPF programs (jobscope.bpf.c), the
// bpf2go output built from them, the loader that attaches them and pins their
// maps, and the reader that sums the per-CPU counters.
package bpf

// The generated .go and .o files are committed: `go build` needs no clang.
// Regenerate with `make generate` (or `go generate ./bpf/`), which needs
// clang, llvm-strip and libbpf-dev. -mcpu=v3: v1 rejects using the result of
// an atomic add. One little-endian object serves amd64 and arm64 alike: the
// programs touch only CO-RE-relocated fields and tracepoint arguments (no
// pt_regs), so headers/vmlinux.h, which is x86_64's, fits both.
// The benchmark's empty program (bench/) is built by bench_gen_test.go into
// _test files, so the product embeds only the objects it loads.
//go:generate go tool bpf2go -tags linux -cc clang -cflags "-O2 -g -Wall -Werror -mcpu=v3" -target bpfel -type job_key -type counters jobscope jobscope.bpf.c -- -I../headers
//go:generate sh -c "clang --version | head -n 1 > clang-version.txt"
