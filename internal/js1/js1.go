// SPDX-License-Identifier: Apache-2.0

package js1

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"unicode/utf8"
)

// Prefix starts every JS1 comment.
const Prefix = "JS1:"

// jobstats writes these for jobs too short to measure or without data:
// JS1 comments that hold no figures.
const (
	markShort = Prefix + "Short"
	markNone  = Prefix + "None"
)

// Bounds on a comment read back. jobstats measured its summaries at under
// 5000 characters for the largest jobs of a 100,000-core site; the limits
// leave room for thousands of nodes and stop there.
const (
	MaxComment   = 256 << 10 // encoded comment, bytes
	MaxJSON      = 1 << 20   // decompressed JSON, bytes
	MaxNodes     = 4096
	MaxGPUs      = 64 // per node
	MaxDepth     = 6  // JSON nesting; the format needs 4
	MaxName      = 255
	MaxWarnings  = 32
	maxStringLen = 255
)

// ExtraVersion is the layout of the "jobscope" object.
const ExtraVersion = 1

// Summary is the JS1 object. Units follow jobstats' documentation:
// TotalTime is the job's run time (elapsed seconds), a node's TotalTime its
// CPU time (user + system seconds), memory in bytes (UsedMemory the peak),
// GPU utilisation in percent; GPU maps are keyed by the GPU's index.
type Summary struct {
	GPUs      int             `json:"gpus"`
	TotalTime float64         `json:"total_time"`
	Nodes     map[string]Node `json:"nodes"`
	Jobscope  *Extra          `json:"jobscope,omitempty"`
}

// Node is one node's figures.
type Node struct {
	CPUs           int                `json:"cpus"`
	TotalMemory    float64            `json:"total_memory"`
	UsedMemory     float64            `json:"used_memory"`
	TotalTime      float64            `json:"total_time"`
	GPUTotalMemory map[string]float64 `json:"gpu_total_memory,omitempty"`
	GPUUsedMemory  map[string]float64 `json:"gpu_used_memory,omitempty"`
	GPUUtilization map[string]float64 `json:"gpu_utilization,omitempty"`
}

// Extra is jobscope's own part: what its report needs beyond jobstats'
// fields, kept small (it is stored for every job). Times are Unix seconds.
type Extra struct {
	Version   int      `json:"v"`
	Key       string   `json:"key,omitempty"`
	Cluster   string   `json:"cluster,omitempty"`
	User      string   `json:"user,omitempty"`
	Account   string   `json:"account,omitempty"`
	State     string   `json:"state,omitempty"`
	Start     int64    `json:"start,omitempty"`
	End       int64    `json:"end,omitempty"`
	CPUUser   *float64 `json:"cpu_user,omitempty"`
	CPUSystem *float64 `json:"cpu_system,omitempty"`
	OOMKills  *float64 `json:"oom_kills,omitempty"`
	Warnings  []string `json:"warnings,omitempty"`
}

// Kind is what an AdminComment holds.
type Kind int

// Kinds of comment: the writer fills Empty ones only, leaves Other ones
// alone whatever it is told, and rewrites JS1 ones only on request.
const (
	Empty Kind = iota
	JS1
	Other
)

// Classify says what a comment is, without decoding it.
func Classify(comment string) Kind {
	switch c := strings.TrimSpace(comment); {
	case c == "":
		return Empty
	case strings.HasPrefix(c, Prefix):
		return JS1
	}
	return Other
}

// Errors of Decode; every one wraps ErrInvalid except ErrNoData.
var (
	ErrInvalid = errors.New("not a valid JS1 summary")
	// ErrNoData is a JS1 comment that says it has no figures (jobstats'
	// "JS1:Short" and "JS1:None").
	ErrNoData = errors.New("JS1 summary without figures")
)

func invalid(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, a...))
}

// Encode returns s as a JS1 comment.
func Encode(s *Summary) (string, error) {
	if err := s.check(); err != nil {
		return "", err
	}
	raw, err := json.Marshal(s)
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression) // the level is valid
	if _, err := zw.Write(raw); err != nil {
		return "", err
	}
	if err := zw.Close(); err != nil {
		return "", err
	}
	out := Prefix + base64.StdEncoding.EncodeToString(b.Bytes())
	if len(out) > MaxComment {
		return "", fmt.Errorf("summary is %d bytes encoded, over %d", len(out), MaxComment)
	}
	return out, nil
}

// Decode reads a JS1 comment. Whatever the comment holds, it reads at most
// MaxComment bytes of it and inflates at most MaxJSON bytes.
func Decode(comment string) (*Summary, error) {
	c := strings.TrimSpace(comment)
	if len(c) > MaxComment {
		return nil, invalid("comment is %d bytes, over %d", len(c), MaxComment)
	}
	if !strings.HasPrefix(c, Prefix) {
		return nil, invalid("no %q prefix", Prefix)
	}
	if c == markShort || c == markNone {
		return nil, ErrNoData
	}
	// sacct pads a column with spaces and jobstats' own pipeline strips
	// them: blanks inside are not part of base64.
	b64 := strings.Map(func(r rune) rune {
		if r == ' ' || r == '\t' || r == '\n' || r == '\r' {
			return -1
		}
		return r
	}, c[len(Prefix):])
	gz, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, invalid("base64: %v", err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, invalid("gzip: %v", err)
	}
	// One byte over the limit tells a summary that is too large from one
	// that is exactly MaxJSON.
	raw, err := io.ReadAll(io.LimitReader(zr, MaxJSON+1))
	if err != nil {
		return nil, invalid("gzip: %v", err)
	}
	if len(raw) > MaxJSON {
		return nil, invalid("inflates past %d bytes", MaxJSON)
	}
	if d := depth(raw); d > MaxDepth {
		return nil, invalid("JSON nested %d deep, over %d", d, MaxDepth)
	}
	var s Summary
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, invalid("JSON: %v", err)
	}
	if err := s.check(); err != nil {
		return nil, err
	}
	return &s, nil
}

// depth is the deepest nesting of objects and arrays in b, stopping as
// soon as it passes MaxDepth (strings are skipped, escapes included).
func depth(b []byte) int {
	d, most, inStr := 0, 0, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case inStr && c == '\\':
			i++
		case c == '"':
			inStr = !inStr
		case inStr:
		case c == '{' || c == '[':
			d++
			if d > most {
				most = d
				if most > MaxDepth {
					return most
				}
			}
		case c == '}' || c == ']':
			d--
		}
	}
	return most
}

// check refuses what no real job has: the bounds above, negative or
// non-finite figures, names that are not short printable text.
func (s *Summary) check() error {
	if len(s.Nodes) > MaxNodes {
		return invalid("%d nodes, over %d", len(s.Nodes), MaxNodes)
	}
	if s.GPUs < 0 || s.GPUs > MaxNodes*MaxGPUs || !figure(s.TotalTime) {
		return invalid("gpus %d, total_time %v", s.GPUs, s.TotalTime)
	}
	for name, n := range s.Nodes {
		if !name1(name, MaxName) || name == "" {
			return invalid("node name %q", clip(name))
		}
		if n.CPUs < 0 || n.CPUs > 1<<20 || !figure(n.TotalMemory) || !figure(n.UsedMemory) || !figure(n.TotalTime) {
			return invalid("node %q: a figure out of range", name)
		}
		for _, m := range []map[string]float64{n.GPUTotalMemory, n.GPUUsedMemory, n.GPUUtilization} {
			if len(m) > MaxGPUs {
				return invalid("node %q: %d GPUs, over %d", name, len(m), MaxGPUs)
			}
			for k, v := range m {
				if !name1(k, 64) || k == "" || !figure(v) {
					return invalid("node %q: GPU %q", name, clip(k))
				}
			}
		}
	}
	if x := s.Jobscope; x != nil {
		if len(x.Warnings) > MaxWarnings {
			return invalid("%d warnings, over %d", len(x.Warnings), MaxWarnings)
		}
		for _, t := range append([]string{x.Key, x.Cluster, x.User, x.Account, x.State}, x.Warnings...) {
			if !name1(t, maxStringLen) {
				return invalid("jobscope field %q", clip(t))
			}
		}
		for _, p := range []*float64{x.CPUUser, x.CPUSystem, x.OOMKills} {
			if p != nil && !figure(*p) {
				return invalid("jobscope figure %v", *p)
			}
		}
	}
	return nil
}

func figure(v float64) bool { return v >= 0 && !math.IsInf(v, 0) && !math.IsNaN(v) }

// name1 accepts short printable UTF-8 without control characters: a node
// name, a GPU index, a user name. What passes is still escaped where shown.
func name1(s string, limit int) bool {
	if len(s) > limit || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r < ' ' || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return false
		}
	}
	return true
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}
