// SPDX-License-Identifier: Apache-2.0

package report

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// hostile is what a job's user can put in a job name (sbatch -J), a path
// or a command line: a screen clear, a window-title change ended by BEL, a
// C1 CSI, DEL, a right-to-left override and a byte that is not UTF-8, all
// after a spreadsheet formula.
const hostile = "=HYPERLINK(\"http://x\")\x1b[2J\x1b]0;pwned\a\u009b31m\x7f\u202etxt.exe\xff"

// termSafe is termsafe.String, tested in its own package.

func TestCSVSafe(t *testing.T) {
	for in, want := range map[string]string{
		"physics": "physics", "=1+1": "'=1+1", "+1": "'+1", "-1": "'-1", "@SUM(A1)": "'@SUM(A1)",
		"\tx": "'␉x", "\rx": "'␍x", "a=b": "a=b", "": "",
	} {
		if got := csvSafe(in); got != want {
			t.Errorf("csvSafe(%q) = %q, want %q", in, got, want)
		}
	}
}

// fill sets every string in v to s, every number to 1 (counts to 2) and
// gives every slice two elements, so that each field a writer prints is
// there and hostile, including fields added after this test.
func fill(v reflect.Value, s string) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(s)
	case reflect.Float64:
		v.SetFloat(1)
	case reflect.Int:
		v.SetInt(2)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), s)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range 2 {
			fill(v.Index(i), s)
		}
	case reflect.Array:
		for i := range v.Len() {
			fill(v.Index(i), s)
		}
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(scenarioNow))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), s)
			}
		}
	}
}

// ownEscapes are the colour codes textWriter writes itself.
var ownEscapes = regexp.MustCompile(`\x1b\[[0-9;]*m`)

// TestEveryWriterEscapes: with hostile text in every field, no output
// format lets a control, a bidi override or a broken byte through, and the
// JSON still decodes to the very same text.
func TestEveryWriterEscapes(t *testing.T) {
	var rep Report
	fill(reflect.ValueOf(&rep).Elem(), hostile)
	var u Usage
	fill(reflect.ValueOf(&u).Elem(), hostile)
	for name, write := range map[string]func(io.Writer) error{
		"job text":          func(w io.Writer) error { return WriteText(w, &rep, time.UTC, false) },
		"job text, colour":  func(w io.Writer) error { return WriteText(w, &rep, time.UTC, true) },
		"usage text":        func(w io.Writer) error { return WriteUsageText(w, &u, time.UTC, false, 5) },
		"usage text colour": func(w io.Writer) error { return WriteUsageText(w, &u, time.UTC, true, 5) },
		"usage CSV":         func(w io.Writer) error { return WriteUsageCSV(w, &u) },
		"job JSON":          func(w io.Writer) error { return writeJSON(w, &rep) },
		"usage JSON":        func(w io.Writer) error { return writeJSON(w, &u) },
	} {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			if err := write(&b); err != nil {
				t.Fatal(err)
			}
			checkTerminalSafe(t, b.String())
		})
	}
	var b bytes.Buffer
	if err := writeJSON(&b, &rep); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	// encoding/json turns the broken byte into U+FFFD; the rest is kept.
	if want := strings.ToValidUTF8(hostile, "\ufffd"); back.Job.Name != want {
		t.Errorf("JSON job name %q, want %q", back.Job.Name, want)
	}
}

func checkTerminalSafe(t *testing.T, out string) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Errorf("output is not UTF-8")
	}
	for i, line := range strings.Split(ownEscapes.ReplaceAllString(out, ""), "\n") {
		if j := strings.IndexFunc(line, unsafeRune); j >= 0 {
			t.Errorf("line %d has %U raw: %q", i+1, []rune(line[j:])[0], line)
		}
	}
	if strings.Contains(out, "\x1b[2J") || strings.Contains(out, "\x1b]0;") {
		t.Errorf("escape sequence in the output:\n%s", out)
	}
}

// rewriter serves the recorded Prometheus answers with some label values
// replaced, as if jobs had been given hostile names.
type rewriter struct {
	next http.RoundTripper
	r    *strings.Replacer
}

func (rw rewriter) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := rw.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	b = []byte(rw.r.Replace(string(b)))
	resp.Body = io.NopCloser(bytes.NewReader(b))
	resp.ContentLength = int64(len(b))
	resp.Header.Del("Content-Length")
	return resp, nil
}

// TestHostileLabelsThroughTheCLI: a job name, account and partition with
// escape sequences, from Prometheus, through `jobscope report` in each
// text format and to stderr.
func TestHostileLabelsThroughTheCLI(t *testing.T) {
	rp := loadReplay(t)
	srv := rp.server(t)
	h, err := json.Marshal(hostile)
	if err != nil {
		t.Fatal(err)
	}
	rt := rewriter{next: http.DefaultTransport, r: strings.NewReplacer(`"name": "train"`, `"name": `+string(h),
		`"account": "physics"`, `"account": `+string(h), `"partition": "gpu"`, `"partition": `+string(h),
		`"name": "old"`, `"name": `+string(h), `"user": "dave"`, `"user": `+string(h))}
	for _, args := range [][]string{
		{"4242"}, {"--color=always", "4242"},
		{"--user=alice", "--since=30d"}, {"--user=alice", "--since=30d", "--format=csv"},
		{"--user=alice", "--since=30d", "--format=json"}, {"--format=json", "4242"},
		{"777"}, // a reused id: the candidates are listed on stderr
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var out, errb bytes.Buffer
			code := mainWith(t.Context(), append([]string{"--config=testdata/report.yml", "--prometheus.url=" + srv.URL,
				"--color=never"}, args...), &out, &errb, true, scenarioOptions(t, rt))
			if code != ExitOK && code != ExitAmbiguous {
				t.Fatalf("exit %d: %s", code, errb.String())
			}
			if !strings.Contains(out.String()+errb.String(), "HYPERLINK") {
				t.Fatalf("the hostile text is not in the output: the test tests nothing\n%s%s", out.String(), errb.String())
			}
			checkTerminalSafe(t, out.String())
			checkTerminalSafe(t, errb.String())
			if last := args[len(args)-1]; last == "--format=csv" && !strings.Contains(out.String(), `'=HYPERLINK`) {
				t.Errorf("CSV cell not guarded against formulas:\n%s", out.String())
			}
		})
	}
}
