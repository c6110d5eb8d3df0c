// SPDX-License-Identifier: Apache-2.0

package contrib

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// The README and docs/ link to each other by relative path and #anchor; a
// page moved or a heading renamed leaves a link that GitHub shows as a 404
// or a jump to nowhere. These tests read the Markdown as GitHub does
// closely enough to catch that: links outside code, anchors made from
// headings by GitHub's rule.

var (
	// [text](target) and ![alt](target), with an optional "title".
	mdLink = regexp.MustCompile(`\]\(([^()\s]+)(?:\s+"[^"]*")?\)`)
	// Inline code spans hold example text, not links.
	codeSpan = regexp.MustCompile("``[^`]*``|`[^`]*`")
	// A scheme (https:, mailto:) makes a link absolute: not checked here.
	scheme = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// mdLine is one line of Markdown prose (fenced code blocks left out) with
// its 1-based line number.
type mdLine struct {
	n    int
	text string
}

// proseLines returns the lines of a Markdown file that are outside fenced
// code blocks (``` or ~~~, indented or not, as in list items).
func proseLines(src string) []mdLine {
	var out []mdLine
	fence := ""
	for i, l := range strings.Split(src, "\n") {
		t := strings.TrimSpace(l)
		if fence != "" {
			if strings.HasPrefix(t, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			fence = t[:3]
			continue
		}
		out = append(out, mdLine{i + 1, l})
	}
	return out
}

// anchors returns the fragment ids GitHub gives the headings of a Markdown
// file: the heading's text (code and link markup removed) in lower case,
// without punctuation, spaces as hyphens; a repeated id gets -1, -2, ...
func anchors(src string) map[string]bool {
	ids := map[string]bool{}
	seen := map[string]int{}
	for _, l := range proseLines(src) {
		t := strings.TrimLeft(l.text, "#")
		if t == l.text || !strings.HasPrefix(t, " ") || len(l.text)-len(t) > 6 {
			continue
		}
		t = strings.ReplaceAll(strings.TrimSpace(t), "`", "")
		t = mdLink.ReplaceAllString(t, "]")
		t = strings.NewReplacer("[", "", "]", "").Replace(t)
		var b strings.Builder
		for _, r := range strings.ToLower(t) {
			switch {
			case r == ' ':
				b.WriteByte('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		id := b.String()
		if n := seen[id]; n > 0 {
			seen[id]++
			id += "-" + strconv.Itoa(n)
		} else {
			seen[id] = 1
		}
		ids[id] = true
	}
	return ids
}

// docPages is the README and every page of docs/.
func docPages(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob("../docs/*.md")
	if err != nil || len(pages) == 0 {
		t.Fatalf("no docs/*.md found (%v)", err)
	}
	return append([]string{"../README.md"}, pages...)
}

// checkLinks reports every relative link of one Markdown file that names a
// file that does not exist, or an anchor its target has no heading for.
func checkLinks(path string) []string {
	src, err := readString(path)
	if err != nil {
		return []string{err.Error()}
	}
	var bad []string
	for _, l := range proseLines(src) {
		for _, m := range mdLink.FindAllStringSubmatch(codeSpan.ReplaceAllString(l.text, ""), -1) {
			target := m[1]
			if scheme.MatchString(target) {
				continue
			}
			file, frag, _ := strings.Cut(target, "#")
			dest := path
			if file != "" {
				dest = filepath.Join(filepath.Dir(path), file)
			}
			where := filepath.Base(path) + ":" + strconv.Itoa(l.n) + ": " + target
			if _, err := os.Stat(dest); err != nil {
				bad = append(bad, where+": no such file")
				continue
			}
			if frag == "" || !strings.HasSuffix(dest, ".md") {
				continue
			}
			body, err := readString(dest)
			if err != nil {
				bad = append(bad, where+": "+err.Error())
				continue
			}
			if !anchors(body)[frag] {
				bad = append(bad, where+": no heading makes #"+frag)
			}
		}
	}
	return bad
}

func readString(path string) (string, error) {
	b, err := os.ReadFile(path)
	return string(b), err
}

func TestDocLinks(t *testing.T) {
	for _, p := range docPages(t) {
		for _, b := range checkLinks(p) {
			t.Error(b)
		}
	}
}

// TestDocsIndexListsEveryPage: docs/README.md is the index of docs/, so a
// new page that it does not link is a page nobody finds.
func TestDocsIndexListsEveryPage(t *testing.T) {
	index, err := readString("../docs/README.md")
	if err != nil {
		t.Fatal(err)
	}
	linked := map[string]bool{}
	for _, l := range proseLines(index) {
		for _, m := range mdLink.FindAllStringSubmatch(l.text, -1) {
			file, _, _ := strings.Cut(m[1], "#")
			linked[filepath.Clean(file)] = true
		}
	}
	for _, p := range docPages(t)[1:] {
		name := filepath.Base(p)
		if name != "README.md" && !linked[name] {
			t.Errorf("docs/README.md does not link %s", name)
		}
	}
}

// TestCheckLinksFindsBrokenOnes holds the checker itself to what it is
// for, on a page written for the purpose: a missing file, a missing
// anchor, and links it must leave alone (code, URLs, good anchors).
func TestCheckLinksFindsBrokenOnes(t *testing.T) {
	dir := t.TempDir()
	page := filepath.Join(dir, "page.md")
	other := filepath.Join(dir, "other.md")
	files := map[string]string{
		other: "# Other\n\n## For users: `jobscope report`\n\n## Same\n\n## Same\n",
		page: strings.Join([]string{
			"# Page",
			"[ok](other.md) [ok](other.md#for-users-jobscope-report) [ok](other.md#same-1) [ok](#page)",
			"[gone](missing.md) and [bad anchor](other.md#nowhere)",
			"[url](https://example.org/x.md) `[code](nothere.md)`",
			"```",
			"[fenced](alsonothere.md)",
			"```",
		}, "\n"),
	}
	for p, s := range files {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := checkLinks(page)
	want := []string{
		"page.md:3: missing.md: no such file",
		"page.md:3: other.md#nowhere: no heading makes #nowhere",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("checkLinks found\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
