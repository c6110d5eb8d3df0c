// SPDX-License-Identifier: Apache-2.0

package slurmcli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"

	clustergen "github.com/jobscope/jobscope/test/gen/cluster"
)

// agree checks that the stream decoder gives what the full decode gives:
// the same jobs, field by field, or an error where it fails. The stream is
// read a byte and 13 bytes at a time too, so values cross read boundaries.
func agree(t *testing.T, b []byte) {
	t.Helper()
	want, werr := parseSqueueJSONFull(bytes.NewReader(b))
	for _, r := range []io.Reader{bytes.NewReader(b), iotest.OneByteReader(bytes.NewReader(b)), &chunkReader{b: b, n: 13}} {
		got, err := ParseSqueueJSON(r)
		if werr != nil {
			if errors.Is(werr, ErrJSONShape) != errors.Is(err, ErrJSONShape) {
				t.Fatalf("full decode: %v; stream: %v", werr, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("full decode has %d jobs; stream: %v", len(want), err)
		}
		if len(got) != len(want) {
			t.Fatalf("stream has %d jobs, full decode %d", len(got), len(want))
		}
		for i := range want {
			if !reflect.DeepEqual(got[i], want[i]) {
				t.Fatalf("job %d:\nstream %+v\nfull   %+v", i, got[i], want[i])
			}
		}
	}
}

// chunkReader returns n bytes a read: window ends fall inside keys,
// values and between a key and its colon.
type chunkReader struct {
	b []byte
	n int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, io.EOF
	}
	k := copy(p[:min(len(p), c.n)], c.b)
	c.b = c.b[k:]
	return k, nil
}

// TestSqueueStreamAgrees: every squeue --json capture of 22.05, 24.11 and
// 26.05 gives the same jobs through the stream decoder as through a full
// decode.
func TestSqueueStreamAgrees(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "slurm", "*", "squeue*.json"))
	if len(files) < 6 {
		t.Fatalf("only %d captures: %v", len(files), files)
	}
	for _, f := range files {
		t.Run(f, func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			agree(t, b)
		})
	}
}

// TestSqueueStreamAgreesGenerated: the simulated 50,000-job cluster
// (test/gen/cluster, from real 22.05 records) decodes alike.
func TestSqueueStreamAgreesGenerated(t *testing.T) {
	if testing.Short() {
		t.Skip("50,000 jobs")
	}
	dir := t.TempDir()
	shape := clustergen.Default
	shape.Jobs = 50000
	if err := clustergen.Write(dir, fixtures, shape); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*squeue*.json"))
	if len(files) == 0 {
		files, _ = filepath.Glob(filepath.Join(dir, "*", "*squeue*.json"))
	}
	if len(files) == 0 {
		t.Fatal("no squeue JSON in the generated cluster")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		want, err := parseSqueueJSONFull(bytes.NewReader(b))
		if err != nil || len(want) < 50000 {
			t.Fatalf("%s: %d jobs, %v", f, len(want), err)
		}
		agree(t, b)
	}
}

// TestSqueueStreamOddForms: forms a full decode takes that the stream
// decoder's fast paths do not read themselves (escapes, other key cases,
// duplicate keys, nulls, the 23.02 number object in other orders).
func TestSqueueStreamOddForms(t *testing.T) {
	for _, s := range []string{
		`{"jobs":[{"job_id":1,"partition":"a\u0062","JOB_STATE":"running","Job_ſtate":["PENDING","X"]}]}`,
		`{"jobs":[{"job_id":{"number":5,"set":true},"cpus":{"set":true,"infinite":true,"number":1},"user_id":{"set":true,"set":false,"number":3}}]}`,
		`{"jobs":[{"job_id":2,"partition":"a","partition":null,"account":"\u00e9","qos":"\ud800"}]}`,
		`{"jobs":[null,{"job_id":4,"job_state":["COMPLETED"],"nodes":"n1"}],"meta":{"x":[1,{"y":"]"}]}}`,
		`{"jobs":[{"job_id":1e3,"submit_time":-1,"start_time":1.7e9,"memory_per_cpu":{"set":true,"number":100},"tres_per_node":"gres:gpu:2"}]}`,
		`{"jobs":null,"errors":[{"error":"down","error_number":1}]}`,
		`{"jobs":[{"job_id":1}],"jobs":null}`,
		`{"errors":[]}`, `null`, `[]`, `{"jobs":{}}`, `{"jobs":[1]}`, `{"jobs":[{"job_id":"x"}]}`,
		`{"jobs":[{"job_id":true,"cpus":{"set":"yes"}}]}`, `{"jobs":[{"partition":5}]}`, `{"jobs":[{"job_state":["A",]}]}`,
		// Runs of backslashes before a quote, skipped and kept: an even run
		// ends the string, an odd one escapes the quote.
		`{"jobs":[{"job_id":1,"name":"\\","comment":"\"x\\\"}","x":["\\\\",{"\\":"\""}],"partition":"p\\","qos":"\\\""}]}`,
		`{"jobs":[{"job_id":1,"name":"\\"x"}]}`, `"\\"`, `"a\"`, `{"jobs":[{"job_id":1,"x":[1,2,3` + "\t\r\n" + `]}]}`,
	} {
		t.Run(s, func(t *testing.T) { agree(t, []byte(s)) })
	}
}

// TestSqueueStreamRejectsMalformed: a value that is not JSON fails the
// parse whether it is kept or skipped, at the top, in a job or nested, and
// wherever the reads cut it: skipping checks the grammar (agree cannot
// tell, as the stream does not check the strings it skips).
func TestSqueueStreamRejectsMalformed(t *testing.T) {
	for _, v := range []string{
		`[1,]`, `[1 2]`, `[}`, `[1]]`, `{"a" 1}`, `{"a":1,}`, `{1:2}`, `{"a":1:2}`, `{"a"}`, `{,}`, `[,1]`,
		`01`, `-`, `1.`, `1.e5`, `1e`, `.5`, `+1`, `tru`, `nul`, `falsey`, `x`, `"a`, `"\\"x"`, `"a"b`,
		`[[[[1]]]`, `{"a":{"b":[1,{"c":}]}}`, `[1,2` + strings.Repeat(" ", 100),
	} {
		for _, doc := range []string{
			`{"jobs":[{"job_id":1,"x":` + v + `,"cpus":2}]}`,
			`{"jobs":[{"job_id":1,"cpus":` + v + `}]}`,
			`{"meta":` + v + `,"jobs":[]}`,
			`{"jobs":[],"x":[{"y":` + v + `}]}`,
		} {
			if json.Valid([]byte(doc)) {
				t.Fatalf("%s is valid JSON", doc)
			}
			b := []byte(doc)
			for _, r := range []io.Reader{bytes.NewReader(b), iotest.OneByteReader(bytes.NewReader(b)), &chunkReader{b: b, n: 5}} {
				if jobs, err := ParseSqueueJSON(r); err == nil {
					t.Errorf("%s: %d jobs, no error", doc, len(jobs))
				}
			}
		}
	}
}

// TestSqueueStreamEscapedKeys: a key written with escapes names its field
// as in a full decode, however long its escapes make it (every letter of
// array_task_string as \uXXXX is 102 bytes; the scanner once gave up on
// keys over 64).
func TestSqueueStreamEscapedKeys(t *testing.T) {
	esc := func(k string) string {
		var b strings.Builder
		for _, r := range k {
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		return b.String()
	}
	for _, k := range []string{"array_task_string", "ARRAY_TASK_STRING", "array_taſk_ſtring", "array_task_string_"} {
		doc := `{"jobs":[{"job_id":1,"array_job_id":7,"` + esc(k) + `":"1-3","job_state":"PENDING"}]}`
		agree(t, []byte(doc))
		jobs, err := ParseSqueueJSON(strings.NewReader(doc))
		if err != nil || len(jobs) != 1 {
			t.Fatal(err, jobs)
		}
		if want := map[bool]string{true: "1-3"}[!strings.HasSuffix(k, "_")]; jobs[0].ArrayTask != want {
			t.Errorf("%s: array task %q, want %q", k, jobs[0].ArrayTask, want)
		}
	}
}

// TestSqueueStreamJobsTwice: a second "jobs" list replaces the first. A
// full decode merges it into the first's elements field by field (an
// artefact of encoding/json reusing a slice); Slurm never prints two.
func TestSqueueStreamJobsTwice(t *testing.T) {
	jobs, err := ParseSqueueJSON(strings.NewReader(`{"jobs":[{"job_id":2,"partition":"a"},{"job_id":5}],"jobs":[{"job_id":3}]}`))
	if err != nil || len(jobs) != 1 || jobs[0].ID != "3" || jobs[0].Partition != "" {
		t.Fatalf("%v %+v", err, jobs)
	}
}

// TestSqueueStreamHostile: output a job's user shapes (a 10 MB job name)
// or a broken slurmctld prints (nesting 10,000 deep, cut short) neither
// panics nor is kept: a long name is skipped, deep nesting and truncation
// are errors.
func TestSqueueStreamHostile(t *testing.T) {
	name := strings.Repeat("x", 10<<20)
	jobs, err := ParseSqueueJSON(strings.NewReader(`{"jobs":[{"job_id":1,"name":"` + name + `","job_state":"RUNNING"}]}`))
	if err != nil || len(jobs) != 1 || jobs[0].State != "RUNNING" {
		t.Fatalf("10 MB name: %v %+v", err, jobs)
	}
	deep := `{"jobs":[{"job_id":1,"x":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}]}`
	if _, err := ParseSqueueJSON(strings.NewReader(deep)); err == nil || !strings.Contains(err.Error(), "depth") {
		t.Fatalf("nesting 10,001 deep: %v", err)
	}
	ok := `{"jobs":[{"job_id":1,"x":` + strings.Repeat("[", 9999) + strings.Repeat("]", 9999) + `}]}`
	if _, err := ParseSqueueJSON(strings.NewReader(ok)); err != nil {
		t.Fatalf("nesting 9,999 deep: %v", err)
	}
	full := readFixture(t, "squeue-running.json")
	for _, n := range []int{1, len(full) / 2, len(full) - 2} {
		if _, err := ParseSqueueJSON(bytes.NewReader(full[:n])); err == nil {
			t.Fatalf("cut at %d: no error", n)
		}
	}
}

// FuzzSqueueStream: on any input the stream decoder neither panics nor
// disagrees with a full decode that succeeds.
func FuzzSqueueStream(f *testing.F) {
	f.Add(smallSqueueJSON(f, "squeue-running.json", 3, 7))
	f.Add(smallSqueueJSON(f, "squeue-busy.json", 7, 8, 10, 11))
	f.Add(smallSqueueJSON(f, "../24.11/squeue-running.json", 11, 13, 18))
	f.Add(smallSqueueJSON(f, "../26.05/squeue-running.json", 11, 13, 18))
	f.Add([]byte(`{"jobs":[{"job_id":{"set":true,"number":1},"job_state":["PENDING"],"array_task_string":"1-9:2%3"}]}`))
	f.Add([]byte(`{"jobs":[{"job_id":1,"name":"\"],{","Partition":"p\u00e9","x":[[[{}]]]}],"errors":[]}`))
	f.Fuzz(func(t *testing.T, b []byte) { agree(t, b) })
}

// TestSqueueJSONMemoryPerJob: decoding a queue allocates what its jobs
// keep, not copies of the output (the full decode allocated 9 KB a job of
// this 2.3 KB-a-job output: the output twice, then every field).
func TestSqueueJSONMemoryPerJob(t *testing.T) {
	const n = 5000
	data := bigSqueueJSON(t, n)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	jobs, err := ParseSqueueJSON(bytes.NewReader(data))
	runtime.ReadMemStats(&after)
	if err != nil || len(jobs) != n {
		t.Fatal(len(jobs), err)
	}
	perJob := float64(after.TotalAlloc-before.TotalAlloc) / n
	t.Logf("%.0f bytes allocated a job, output %d bytes a job", perJob, len(data)/n)
	if perJob > 1500 {
		t.Errorf("%.0f bytes allocated a job, want at most 1,500", perJob)
	}
}

// TestSqueueStreamMutated runs what the fuzz target checks on mutations of
// a capture from a fixed seed: the fuzz engine makes slow progress on a
// loaded machine, this always runs.
func TestSqueueStreamMutated(t *testing.T) {
	src := readFixture(t, "squeue-busy.json")
	rng := rand.New(rand.NewPCG(30, 1))
	const tokens = `{}[]":,\ 0-e.tfn`
	for i := range 3000 {
		b := bytes.Clone(src[:rng.IntN(len(src))+1])
		for range 1 + rng.IntN(4) {
			p := rng.IntN(len(b))
			switch rng.IntN(3) {
			case 0:
				b[p] = tokens[rng.IntN(len(tokens))]
			case 1:
				b = append(b[:p], b[p+1:]...)
			default:
				b = slices.Insert(b, p, tokens[rng.IntN(len(tokens))])
			}
			if len(b) == 0 {
				break
			}
		}
		b = append(b, src[len(b)%len(src):]...)
		t.Run(strconv.Itoa(i), func(t *testing.T) { agree(t, b) })
	}
}

// A raw control character in any string, a key or a skipped value, long
// or short, whole in the window or across its end, is not JSON: the stream
// refuses it as a full decode does. Unchecked, an output whose only fault
// was one (FuzzSqueueStream: {"\x01":""}) read as one without a jobs list,
// where a full decode gave a syntax error. Bad escapes in Slurm's own
// fields and in keys are refused the same way.
func TestSqueueStreamControlCharacters(t *testing.T) {
	long := strings.Repeat("x", 100)
	for _, doc := range []string{
		"{\"\x01\":\"\"}",
		"{\"x\":\"a\x1fb\"}",
		"{\"x\":\"" + long + "\x01\"}",
		"{\"x\":\"" + long + "\\n\x01\"}",
		"{\"jobs\":[{\"job_id\":1,\"comment\":\"a\tb\"}]}",
		"{\"jobs\":[{\"job_id\":1,\"name\":\"" + long + "\x00\"}]}",
		"{\"jobs\":[{\"job_id\":1,\"k\x02\":1}]}",
		"{\"jobs\":[{\"job_id\":1,\"x\":[\"a\",{\"b\":\"c\x7fd\x10\"}]}]}",
		// Bad escapes outside the jobs list, in a value or a key.
		`{"x":"\q"}`,
		`{"x":"\u12"}`,
		`{"meta":{"a":["\u12zz"]}}`,
		`{"\q":1}`,
		`{"jobs":null,"x":"\x"}`,
	} {
		agree(t, []byte(doc))
		for _, r := range []io.Reader{strings.NewReader(doc), iotest.OneByteReader(strings.NewReader(doc)), &chunkReader{b: []byte(doc), n: 13}} {
			if _, err := ParseSqueueJSON(r); err == nil || errors.Is(err, ErrJSONShape) {
				t.Errorf("%q: %v, want a syntax error", doc, err)
			}
		}
	}
}
