// SPDX-License-Identifier: Apache-2.0

package js1

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func f(v float64) *float64 { return &v }

func wrap(t testing.TB, raw []byte) string {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write(raw); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return Prefix + base64.StdEncoding.EncodeToString(b.Bytes())
}

func TestRoundTrip(t *testing.T) {
	in := &Summary{GPUs: 1, TotalTime: 3600, Nodes: map[string]Node{
		"n1": {CPUs: 4, TotalMemory: 8 << 30, UsedMemory: 3 << 30, TotalTime: 12000.5,
			GPUTotalMemory: map[string]float64{"0": 80 << 30}, GPUUsedMemory: map[string]float64{"0": 1 << 30},
			GPUUtilization: map[string]float64{"0": 97.5}},
		"n2": {CPUs: 4, TotalMemory: 8 << 30, UsedMemory: 1 << 30, TotalTime: 100},
	}, Jobscope: &Extra{Version: ExtraVersion, Key: "k", User: "carol", State: "COMPLETED", Start: 1700000000,
		End: 1700003600, CPUUser: f(11000), CPUSystem: f(1100.5), OOMKills: f(0), Warnings: []string{"cpu_efficiency_low"}}}
	c, err := Encode(in)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(c, Prefix) || Classify(c) != JS1 {
		t.Fatalf("encoded %q is not JS1", c)
	}
	out, err := Decode(c)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip:\n in %+v\nout %+v", in, out)
	}
}

// The GPU job summary of jobstats' docs/setup/summaries.md, as its
// epilog stores it: no "jobscope" key, integer and fractional figures.
func TestDecodeJobstatsExample(t *testing.T) {
	c := wrap(t, []byte(`{"gpus": 1, "nodes": {"della-k1g1": {"cpus": 12, "gpu_total_memory": {"1": 85899345920},
		"gpu_used_memory": {"1": 83314868224}, "gpu_utilization": {"1": 98.6}, "total_memory": 137438953472,
		"total_time": 57620.8, "used_memory": 84683702272}}, "total_time": 50944}`))
	// sacct's fixed-width output pads the column: still read.
	s, err := Decode("  " + c + "   ")
	if err != nil {
		t.Fatal(err)
	}
	n := s.Nodes["della-k1g1"]
	if s.GPUs != 1 || s.TotalTime != 50944 || s.Jobscope != nil || n.CPUs != 12 || n.TotalTime != 57620.8 ||
		n.UsedMemory != 84683702272 || n.TotalMemory != 137438953472 || n.GPUUtilization["1"] != 98.6 ||
		n.GPUUsedMemory["1"] != 83314868224 || n.GPUTotalMemory["1"] != 85899345920 {
		t.Fatalf("decoded %+v", s)
	}
}

func TestClassify(t *testing.T) {
	for c, want := range map[string]Kind{"": Empty, "  ": Empty, "JS1:abc": JS1, " JS1:Short": JS1,
		"reviewed by admin": Other, "js1:lower": Other, "JS2:x": Other} {
		if got := Classify(c); got != want {
			t.Errorf("Classify(%q) = %d, want %d", c, got, want)
		}
	}
}

func TestDecodeHostile(t *testing.T) {
	bomb := func() string {
		// 64 MiB of zeros gzip to about 64 KiB: inside MaxComment, far past MaxJSON.
		var b bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
		zero := make([]byte, 1<<20)
		for range 64 {
			_, _ = zw.Write(zero)
		}
		_ = zw.Close()
		return Prefix + base64.StdEncoding.EncodeToString(b.Bytes())
	}()
	if len(bomb) > MaxComment {
		t.Fatalf("bomb is %d bytes: the test must reach the inflate limit, not the comment limit", len(bomb))
	}
	deep := `{"gpus":0,"total_time":1,"nodes":{},"x":` + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + `}`
	many := `{"gpus":0,"total_time":1,"nodes":{"n":{}`
	for i := range MaxNodes {
		many += `,"n` + itoa(i) + `":{}`
	}
	many += `}}`
	cases := map[string]string{
		"not JS1":         "reviewed: keep",
		"bad base64":      "JS1:%%%notbase64",
		"not gzip":        Prefix + base64.StdEncoding.EncodeToString([]byte("plain text")),
		"gzip bomb":       bomb,
		"deep JSON":       wrap(t, []byte(deep)),
		"too many nodes":  wrap(t, []byte(many)),
		"huge comment":    Prefix + strings.Repeat("A", MaxComment+4),
		"negative":        wrap(t, []byte(`{"gpus":-1,"total_time":1,"nodes":{}}`)),
		"control in node": wrap(t, []byte(`{"gpus":0,"total_time":1,"nodes":{"n\u001b[2J":{"cpus":1}}}`)),
		"not an object":   wrap(t, []byte(`[1,2,3]`)),
		"truncated gzip":  Prefix + base64.StdEncoding.EncodeToString([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff, 1}),
		"string too long": wrap(t, []byte(`{"gpus":0,"total_time":1,"nodes":{},"jobscope":{"v":1,"user":"`+strings.Repeat("u", 300)+`"}}`)),
		"too many GPUs":   wrap(t, []byte(`{"gpus":0,"total_time":1,"nodes":{"n":{"gpu_utilization":{`+gpus(MaxGPUs+1)+`}}}}`)),
		"too many warnings": wrap(t, []byte(`{"gpus":0,"total_time":1,"nodes":{},"jobscope":{"v":1,"warnings":[`+
			strings.TrimSuffix(strings.Repeat(`"w",`, MaxWarnings+1), ",")+`]}}`)),
	}
	for name, c := range cases {
		s, err := Decode(c)
		if !errors.Is(err, ErrInvalid) || s != nil {
			t.Errorf("%s: got %v, %v; want ErrInvalid", name, s, err)
		}
	}
	for _, c := range []string{"JS1:Short", "JS1:None"} {
		if _, err := Decode(c); !errors.Is(err, ErrNoData) {
			t.Errorf("%s: %v, want ErrNoData", c, err)
		}
	}
}

func itoa(i int) string {
	const d = "0123456789"
	if i < 10 {
		return d[i : i+1]
	}
	return itoa(i/10) + d[i%10:i%10+1]
}

func gpus(n int) string {
	var s []string
	for i := range n {
		s = append(s, `"`+itoa(i)+`":1`)
	}
	return strings.Join(s, ",")
}

func TestEncodeRefusesWhatDecodeWould(t *testing.T) {
	if _, err := Encode(&Summary{Nodes: map[string]Node{"bad\nname": {}}}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Encode of a node name with a newline: %v", err)
	}
}

func FuzzDecode(f *testing.F) {
	s, _ := Encode(&Summary{GPUs: 1, TotalTime: 10, Nodes: map[string]Node{"n": {CPUs: 1, TotalTime: 5,
		GPUUtilization: map[string]float64{"0": 50}}}, Jobscope: &Extra{Version: 1, User: "u"}})
	for _, seed := range []string{s, "", "JS1:", "JS1:Short", "JS1:H4sI", "reviewed"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, c string) {
		got, err := Decode(c)
		if err != nil {
			return
		}
		// What decodes encodes again and decodes to the same.
		again, err := Encode(got)
		if err != nil {
			t.Fatalf("decoded summary does not encode: %v", err)
		}
		if back, err := Decode(again); err != nil || !reflect.DeepEqual(back, got) {
			t.Fatalf("re-decode: %v", err)
		}
	})
}
