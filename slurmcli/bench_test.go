// SPDX-License-Identifier: Apache-2.0

package slurmcli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/jobscope/jobscope/internal/testutil"
)

// bigSqueueJSON replicates the real capture's jobs to n records, the size
// of a busy cluster's queue, to measure what a poll costs the exporter.
func bigSqueueJSON(b testing.TB, n int) []byte {
	return bigSqueueJSONIndent(b, n, "")
}

// bigSqueueJSONIndent is bigSqueueJSON indented by indent a level ("" for
// compact): Slurm's data_parser prints two spaces a level, so a real
// queue's output is about half white space.
func bigSqueueJSONIndent(b testing.TB, n int, indent string) []byte {
	var in map[string]any
	if err := json.Unmarshal(readFixture(b, "squeue-running.json"), &in); err != nil {
		b.Fatal(err)
	}
	src := in["jobs"].([]any)
	jobs := make([]any, 0, n)
	for i := range n {
		j := map[string]any{}
		for k, v := range src[i%len(src)].(map[string]any) {
			j[k] = v
		}
		j["job_id"] = i + 1
		jobs = append(jobs, j)
	}
	in["jobs"] = jobs
	out, err := json.Marshal(in)
	if indent != "" {
		out, err = json.MarshalIndent(in, "", indent)
	}
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// BenchmarkParseSqueueJSON10k decodes 10,000 jobs, compact (as
// test/gen/cluster writes them) and indented (as Slurm prints them).
func BenchmarkParseSqueueJSON10k(b *testing.B) {
	for _, v := range []struct{ name, indent string }{{"compact", ""}, {"indented", "  "}} {
		b.Run(v.name, func(b *testing.B) {
			data := bigSqueueJSONIndent(b, 10000, v.indent)
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			n, cpu0 := 0, testutil.CPUTime()
			for b.Loop() {
				if _, err := ParseSqueueJSON(bytes.NewReader(data)); err != nil {
					b.Fatal(err)
				}
				n++
			}
			b.ReportMetric(float64(testutil.CPUTime()-cpu0)/float64(n), "cpu-ns/op")
		})
	}
}

func BenchmarkParseSqueueText10k(b *testing.B) {
	lines := strings.Split(strings.TrimSpace(string(withSep(readFixture(b, "squeue-O-busy.txt"), len(squeueTextFields), testSep))), "\n")
	var buf bytes.Buffer
	for i := range 10000 {
		// Each job once: a job printed twice is refused.
		buf.WriteString(strings.Replace(lines[i%len(lines)], testSep, fmt.Sprintf("_%d%s", i, testSep), 1))
		buf.WriteByte('\n')
	}
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if jobs, _, err := ParseSqueueText(bytes.NewReader(data), testSep); err != nil || len(jobs) != 10000 {
			b.Fatal(len(jobs), err)
		}
	}
}

func BenchmarkParseScontrolRecords(b *testing.B) {
	data := readFixture(b, "scontrol-show-job-o-running.txt")
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseScontrolRecords(bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
}
