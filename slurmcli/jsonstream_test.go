// SPDX-License-Identifier: Apache-2.0

package slurmcli

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestWordTests checks the tests on 8 bytes at once against the same
// tests a byte at a time: every byte value at every position, among random
// neighbours.
func TestWordTests(t *testing.T) {
	rng := rand.New(rand.NewPCG(30, 3))
	for v := range 256 {
		for p := range 8 {
			for range 50 {
				var w [8]byte
				for i := range w {
					w[i] = byte(rng.Uint32())
				}
				w[p] = byte(v)
				x := binary.LittleEndian.Uint64(w[:])
				odd := upperOrHigh(x)
				for i, c := range w {
					want := 'A' <= c && c <= '\\' || c >= utf8.RuneSelf
					if got := odd>>(8*i+7)&1 == 1; got != want {
						t.Fatalf("upperOrHigh(% x): byte %d (%#x) %v, want %v", w, i, c, got, want)
					}
				}
				first := 8
				for i, c := range w {
					if c == 0 {
						first = i
						break
					}
				}
				if got := bits.TrailingZeros64(zeroBytes(x)) / 8; got != first {
					t.Fatalf("zeroBytes(% x): first zero at %d, want %d", w, got, first)
				}
			}
		}
	}
}

// TestSkipSpace: the index of the first byte that is not white space, for
// runs of every length and kind at every offset.
func TestSkipSpace(t *testing.T) {
	rng := rand.New(rand.NewPCG(30, 4))
	const alphabet = "    \n\t\r  x\""
	for range 20000 {
		b := make([]byte, rng.IntN(40))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		i := 0
		if len(b) > 0 {
			i = rng.IntN(len(b) + 1)
		}
		want := i + len(b[i:]) - len(strings.TrimLeft(string(b[i:]), " \t\n\r"))
		if got := skipSpace(b, i); got != want {
			t.Fatalf("skipSpace(%q, %d) = %d, want %d", b, i, got, want)
		}
	}
}

// TestSqueueStreamKeyBytes: keys of every length, with the bytes at the
// edges of what the key scan tells apart (upper case, '[', '\', ']', '`',
// non-ASCII, quotes) at every offset from a word's start, name the fields a
// full decode gives them.
func TestSqueueStreamKeyBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(30, 5))
	odd := []string{"@", "A", "Z", "[", `\\`, `\"`, "]", "`", "a", "z", "_", "\x7f", "é", "ſ", "K", `\u0041`}
	names := []string{"job_id", "partition", "array_task_string", "qos", "jobs", "x"}
	for range 3000 {
		name := []byte(names[rng.IntN(len(names))])
		var k strings.Builder
		for i, c := range name {
			switch {
			case rng.IntN(8) == 0:
				k.WriteString(odd[rng.IntN(len(odd))])
			case rng.IntN(4) == 0 && 'a' <= c && c <= 'z':
				k.WriteByte(c - 'a' + 'A')
			default:
				k.WriteByte(name[i])
			}
		}
		// The key starts at every offset from the window's start.
		pad := strings.Repeat(" ", rng.IntN(16))
		// No other key names the field: the key alone decides the job.
		doc := `{"jobs":[{` + pad + `"array_job_id":3,` + pad + `"` + k.String() + `":"9"}]}`
		t.Run(doc, func(t *testing.T) { agree(t, []byte(doc)) })
	}
}

// TestClosingQuote: the end of a string, against a walk a byte at a time,
// on strings of quotes, backslashes and other bytes at every offset and
// length (past the 8-byte scan's reach too).
func TestClosingQuote(t *testing.T) {
	rng := rand.New(rand.NewPCG(30, 6))
	const alphabet = `aaaaaaa\"`
	for range 50000 {
		b := make([]byte, rng.IntN(100))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		i := rng.IntN(len(b) + 1)
		want := -1
		for j := i; j < len(b); j++ {
			if b[j] == '\\' {
				j++
			} else if b[j] == '"' {
				want = j
				break
			}
		}
		if got := closingQuote(b, i); got != want {
			t.Fatalf("closingQuote(%q, %d) = %d, want %d", b, i, got, want)
		}
	}
}

// TestSqueueStreamKeyOrders: jobs whose keys come in changing orders,
// some lacking keys or having more, keys that are prefixes of others, in
// other cases or escaped, decode as a full decode does: the remembered
// order of keys only saves work.
func TestSqueueStreamKeyOrders(t *testing.T) {
	rng := rand.New(rand.NewPCG(30, 7))
	pool := []string{"job_id", "job_id_x", "job", "nodes", "node", "nodes_", "partition", "PARTITION", `p\u0061rtition`,
		"qos", "user_name", "user_id", "account", "cpus", "array_job_id", "array_task_string", "x", "", "job_state"}
	for round := range 200 {
		var doc strings.Builder
		doc.WriteString(`{"jobs":[`)
		base := rng.Perm(len(pool))
		for j := range 1 + rng.IntN(30) {
			if j > 0 {
				doc.WriteByte(',')
			}
			keys := slices.Clone(base)
			switch rng.IntN(4) { // mostly the same order, sometimes not
			case 0:
				keys = rng.Perm(len(pool))
			case 1:
				keys = keys[:rng.IntN(len(keys)+1)]
			case 2:
				if len(keys) > 2 {
					k := rng.IntN(len(keys) - 1)
					keys = append(keys[:k], keys[k+1+rng.IntN(min(3, len(keys)-k-1)):]...)
				}
			}
			doc.WriteByte('{')
			for n, k := range keys {
				if n > 0 {
					doc.WriteByte(',')
				}
				fmt.Fprintf(&doc, `"%s":"%d"`, pool[k], rng.IntN(5))
				if pool[k] == "job_id" || pool[k] == "array_job_id" || pool[k] == "cpus" {
					doc.WriteString(`,"` + pool[k] + `":` + fmt.Sprint(rng.IntN(9)))
				}
			}
			doc.WriteByte('}')
		}
		doc.WriteString(`]}`)
		t.Run(fmt.Sprint(round), func(t *testing.T) { agree(t, []byte(doc.String())) })
	}
}

// TestSqueueStreamManyKeys: output whose every job has new keys (no
// order to remember) is read all the same, the remembered keys bounded.
func TestSqueueStreamManyKeys(t *testing.T) {
	var doc strings.Builder
	doc.WriteString(`{"jobs":[`)
	for j := range 2000 {
		if j > 0 {
			doc.WriteByte(',')
		}
		fmt.Fprintf(&doc, `{"job_id":%d`, j+1)
		for k := range 10 {
			fmt.Fprintf(&doc, `,"k%d_%d":%d`, j, k, k)
		}
		doc.WriteString(`,"partition":"p"}`)
	}
	doc.WriteString(`]}`)
	agree(t, []byte(doc.String()))
	s := newJSONScanner(strings.NewReader(doc.String()))
	d := squeueDecoder{in: interner{}}
	if _, err := s.peek(); err != nil {
		t.Fatal(err)
	}
	s.pos++
	if _, _, err := s.key(); err != nil {
		t.Fatal(err)
	}
	jobs, ok, err := d.jobs(s, nil)
	if err != nil || !ok || len(jobs) != 2000 || jobs[1999].ID != "2000" || jobs[1999].Partition != "p" {
		t.Fatalf("%v %v %d", err, ok, len(jobs))
	}
	if len(d.order) > maxOrderKeys {
		t.Errorf("%d keys remembered, want at most %d", len(d.order), maxOrderKeys)
	}
}

// TestSmallInt: the integers read without strconv have ParseFloat's
// value, sign of zero included; others are left to it.
func TestSmallInt(t *testing.T) {
	rng := rand.New(rand.NewPCG(30, 8))
	cases := []string{"0", "-0", "1", "-1", "00", "01", "-", "", "999999999999999", "-999999999999999",
		"1000000000000000", "9007199254740993", "1.5", "1e3", "+1", "1x", "null"}
	for range 2000 {
		cases = append(cases, strconv.FormatInt(rng.Int64N(1_000_000_000_000_000)-rng.Int64N(1_000_000_000_000_000), 10))
	}
	for _, c := range cases {
		got, ok := smallInt([]byte(c))
		want, err := strconv.ParseFloat(c, 64)
		if ok && (err != nil || !isJSONNumber([]byte(c)) || got != want || math.Signbit(got) != math.Signbit(want)) {
			t.Errorf("smallInt(%q) = %v, ParseFloat %v %v", c, got, want, err)
		}
		if !ok && len(strings.TrimLeft(c, "-")) <= 15 && isJSONNumber([]byte(c)) && !strings.ContainsAny(c, ".eE") && c != "-0" {
			t.Errorf("smallInt(%q) not read", c)
		}
	}
}
