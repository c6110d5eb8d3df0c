// SPDX-License-Identifier: Apache-2.0

package report

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// scenarioHTML renders job 4242 of the recorded scenario as HTML.
func scenarioHTML(t *testing.T) (*Report, []byte) {
	t.Helper()
	rp := loadReplay(t)
	srv := rp.server(t)
	o := scenarioOptions(t, nil)
	cfg, err := LoadConfig("testdata/report.yml", true)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Prometheus.URL = srv.URL
	o.Config = cfg
	rep, err := JobReport(context.Background(), o, "4242")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteHTML(&b, rep, time.UTC); err != nil {
		t.Fatal(err)
	}
	return rep, b.Bytes()
}

// TestHTMLSelfContained: one file, charts as inline SVG, nothing that a
// browser would fetch, no script.
func TestHTMLSelfContained(t *testing.T) {
	rep, page := scenarioHTML(t)
	s := string(page)
	if n := strings.Count(s, "<svg"); n != len(rep.Charts) || n != 3 {
		t.Errorf("%d inline SVGs, want one per chart (3)", n)
	}
	for _, bad := range []string{"<script", "<link", "<img", "<iframe", "@import", "url(", "src=", "href="} {
		if strings.Contains(s, bad) {
			t.Errorf("page contains %q: it must not fetch or run anything", bad)
		}
	}
	if !strings.Contains(s, `name="viewport"`) {
		t.Error("no viewport meta: unreadable on a phone")
	}
	for _, c := range []string{"cpu", "memory", "gpu"} {
		col := chartColor[c]
		hex := strings.ToUpper(strconv.FormatUint(uint64(col.R)<<16|uint64(col.G)<<8|uint64(col.B), 16))
		if !strings.Contains(strings.ToUpper(s), "STROKE:#"+strings.Repeat("0", 6-len(hex))+hex) {
			t.Errorf("no %s line (stroke #%s) in the SVG", c, hex)
		}
	}
	for _, w := range rep.Warnings {
		if !strings.Contains(s, w.ID) && !strings.Contains(s, htmlEscape(w.Message)) {
			t.Errorf("warning %s missing from the page", w.ID)
		}
	}
}

func htmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "'", "&#39;", "<", "&lt;", ">", "&gt;", `"`, "&#34;").Replace(s)
}

// chromium returns Debian's chromium, or skips (fails under CI, which
// installs it: .ci/deps.sh).
func chromium(t *testing.T) string {
	t.Helper()
	for _, n := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	if os.Getenv("JOBSCOPE_REQUIRE_CHROMIUM") != "" {
		t.Fatal("chromium not found and JOBSCOPE_REQUIRE_CHROMIUM is set (apt-get install chromium)")
	}
	t.Skip("chromium not installed (Debian: apt-get install chromium); skipping the browser test")
	return ""
}

// runChromium opens a local file in a fresh headless Chromium that reaches
// for nothing on the network.
func runChromium(t *testing.T, bin, page string, extra ...string) []byte {
	t.Helper()
	args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
		"--user-data-dir=" + t.TempDir()}, extra...)
	args = append(args, "file://"+page)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", extra, err, stderr.String())
	}
	return stdout.Bytes()
}

// colourPixels counts the pixels within tol of each chart's line colour.
func colourPixels(img image.Image, tol int) map[string]int {
	out := map[string]int{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			for name, c := range chartColor {
				if abs(int(r>>8)-int(c.R)) <= tol && abs(int(g>>8)-int(c.G)) <= tol && abs(int(bl>>8)-int(c.B)) <= tol {
					out[name]++
				}
			}
		}
	}
	return out
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

func screenshot(t *testing.T, bin string, page []byte, width, height int) image.Image {
	t.Helper()
	dir := t.TempDir()
	f := filepath.Join(dir, "report.html")
	if err := os.WriteFile(f, page, 0o644); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(dir, "shot.png")
	runChromium(t, bin, f, "--screenshot="+shot, "--window-size="+strconv.Itoa(width)+","+strconv.Itoa(height))
	r, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer r.Close()
	img, err := png.Decode(r)
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("JOBSCOPE_KEEP_SCREENSHOTS") != "" {
		name := strings.NewReplacer("/", "-", " ", "-").Replace(t.Name()) + "-" + strconv.Itoa(width) + "-" +
			strconv.Itoa(len(page)) + ".png"
		_ = os.WriteFile(filepath.Join(os.Getenv("JOBSCOPE_KEEP_SCREENSHOTS"), name), mustRead(t, shot), 0o644)
	}
	return img
}

func mustRead(t *testing.T, p string) []byte {
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestHTMLInChromium opens the page in a real headless Chromium, at
// desktop and phone width: every chart's line is drawn (its colour covers
// pixels), and the same page with empty series shows none of those
// colours, so the count measures the data, not the page.
func TestHTMLInChromium(t *testing.T) {
	bin := chromium(t)
	rep, page := scenarioHTML(t)
	for _, size := range [][2]int{{1280, 3200}, {500, 5200}} {
		p := page
		if size[0] == 500 {
			p = phoneFrame(page, false) // the page at 360 pixels
		}
		img := screenshot(t, bin, p, size[0], size[1])
		counts := colourPixels(img, 24)
		t.Logf("%dx%d: chart line pixels %v", size[0], size[1], counts)
		for _, c := range []string{"cpu", "memory", "gpu"} {
			if counts[c] < 150 {
				t.Errorf("%dx%d: %s chart: %d pixels of its line colour, want a drawn line (>= 150)", size[0], size[1], c, counts[c])
			}
		}
	}
	empty := *rep
	empty.Charts = nil
	for _, c := range rep.Charts {
		c.Series = []ChartSeries{{Name: "job"}}
		empty.Charts = append(empty.Charts, c)
	}
	var b bytes.Buffer
	if err := WriteHTML(&b, &empty, time.UTC); err != nil {
		t.Fatal(err)
	}
	counts := colourPixels(screenshot(t, bin, b.Bytes(), 1280, 3200), 24)
	for c, n := range counts {
		if n > 20 {
			t.Errorf("page without samples still has %d pixels of the %s line colour: the count does not measure the lines", n, c)
		}
	}
}

// phoneFrame shows page in a 360-pixel-wide frame (headless Chromium's
// window is at least 500 pixels wide) and, with measure, writes the
// page's scroll width and the frame's width into the title. The script is
// the test's; the page has none.
func phoneFrame(page []byte, measure bool) []byte {
	src := strings.NewReplacer("&", "&amp;", `"`, "&quot;").Replace(string(page))
	out := `<!doctype html><html><head><meta charset="utf-8"><title>-</title>` +
		`<style>body{margin:0;background:#fff}</style></head><body>` +
		`<iframe id="f" style="width:360px;height:5200px;border:0" srcdoc="` + src + `"></iframe>`
	if measure {
		out += `<script>var f = document.getElementById("f"); function m() { var d = f.contentDocument.documentElement;` +
			` document.title = "W" + d.scrollWidth + "x" + f.contentWindow.innerWidth; }` +
			` if (f.contentDocument && f.contentDocument.readyState === "complete") m(); else f.onload = m;</script>`
	}
	return []byte(out + "</body></html>")
}

// TestHTMLFitsAPhone: in a 360-pixel-wide viewport the page needs no
// horizontal scrolling.
func TestHTMLFitsAPhone(t *testing.T) {
	bin := chromium(t)
	_, page := scenarioHTML(t)
	f := filepath.Join(t.TempDir(), "probe.html")
	if err := os.WriteFile(f, phoneFrame(page, true), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := runChromium(t, bin, f, "--window-size=600,800", "--dump-dom")
	m := regexp.MustCompile(`<title>W(\d+)x(\d+)</title>`).FindSubmatch(dom)
	if m == nil {
		t.Fatalf("no measurement in the DOM:\n%.500s", dom)
	}
	scroll, _ := strconv.Atoi(string(m[1]))
	inner, _ := strconv.Atoi(string(m[2]))
	t.Logf("scrollWidth %d, viewport %d", scroll, inner)
	if inner != 360 || scroll > inner {
		t.Errorf("page is %d px wide in a %d px viewport (want 360): a phone must scroll sideways", scroll, inner)
	}
}
