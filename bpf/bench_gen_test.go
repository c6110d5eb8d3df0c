// SPDX-License-Identifier: Apache-2.0

package bpf

// The empty tp_btf program that TestBenchBPF and TestVerifierAcceptsEveryProgram
// against: only tests load it, so its Go file and object carry the _test
// suffix and stay out of the product binary.
//go:generate go tool bpf2go -tags linux -cc clang -cflags "-O2 -g -Wall -Werror -mcpu=v3" -target bpfel -output-suffix _test bench bench/empty.bpf.c -- -I../headers
