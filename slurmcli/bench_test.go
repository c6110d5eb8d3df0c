// SPDX-License-Identifier: Apache-2.0

package slurmcli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// bigSqueueJSON replicates the real capture's jobs to n records, the size
// of a busy cluster's queue, to measure what a poll costs the exporter.
func bigSqueueJSON(b testing.TB, n int) []byte {
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
	if err != nil {
		b.Fatal(err)
	}
	return out
}

func BenchmarkParseSqueueJSON10k(b *testing.B) {
	data := bigSqueueJSON(b, 10000)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseSqueueJSON(bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
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
