// SPDX-License-Identifier: Apache-2.0

package bpf

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// generators are the files whose go:generate lines run bpf2go: the
// product's programs, and the benchmark's, which only tests embed.
var generators = []string{"gen.go", "bench_gen_test.go"}

// TestGeneratedUpToDate reruns every bpf2go line of generators into a temporary
// directory and compares with the committed files. The output is
// byte-for-byte reproducible for one clang version, so the test runs only
// with the clang recorded in clang-version.txt (make generate rewrites it).
func TestGeneratedUpToDate(t *testing.T) {
	clang, err := exec.LookPath("clang")
	if err != nil {
		t.Skip("clang not installed: cannot rebuild the BPF objects")
	}
	out, err := exec.Command(clang, "--version").Output()
	if err != nil {
		t.Skipf("clang --version: %v", err)
	}
	have := strings.SplitN(string(out), "\n", 2)[0]
	want, err := os.ReadFile("clang-version.txt")
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(want)) != strings.TrimSpace(have) {
		t.Skipf("objects were generated with %q, this is %q: a byte comparison would mean nothing", strings.TrimSpace(string(want)), have)
	}
	var gen []byte
	for _, f := range generators {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		gen = append(gen, b...)
	}
	dir := t.TempDir()
	n := 0
	for _, line := range strings.Split(string(gen), "\n") {
		rest, ok := strings.CutPrefix(line, "//go:generate go tool bpf2go ")
		if !ok {
			continue
		}
		n++
		args := append([]string{"tool", "bpf2go", "-go-package", "bpf", "-output-dir", dir}, splitArgs(rest)...)
		cmd := exec.Command("go", args...)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, b)
		}
	}
	if n == 0 {
		t.Fatalf("no bpf2go lines in %v", generators)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	for _, f := range files {
		fresh, _ := os.ReadFile(f)
		committed, err := os.ReadFile(filepath.Base(f))
		if err != nil || !bytes.Equal(fresh, committed) {
			t.Errorf("%s is stale: run `make generate` and commit the result", filepath.Base(f))
		}
	}
}

// splitArgs splits a go:generate line on spaces, keeping "quoted words".
func splitArgs(s string) []string {
	var out []string
	var cur strings.Builder
	quoted, have := false, false
	for _, r := range s {
		switch {
		case r == '"':
			quoted = !quoted
			have = true
		case r == ' ' && !quoted:
			if have {
				out = append(out, cur.String())
				cur.Reset()
				have = false
			}
		default:
			cur.WriteRune(r)
			have = true
		}
	}
	if have {
		out = append(out, cur.String())
	}
	return out
}

// TestProductEmbedsOnlyWhatItLoads: the package, as the binary links it,
// embeds the one object the loader loads (loadJobscope). The benchmark's
// empty program used to be embedded too, shipped in every binary and never
// loaded; it belongs to the tests (bench_gen_test.go).
func TestProductEmbedsOnlyWhatItLoads(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{join .EmbedFiles " "}}`, ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	if got := strings.TrimSpace(string(out)); got != "jobscope_bpfel.o" {
		t.Errorf("the product embeds %q, want only jobscope_bpfel.o", got)
	}
}
