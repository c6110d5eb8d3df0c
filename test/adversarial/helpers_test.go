// SPDX-License-Identifier: Apache-2.0

package adversarial

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jobscope/jobscope/internal/testutil"
	fixturegen "github.com/jobscope/jobscope/test/gen/fixture"
)

var binary string

// TestMain runs the suite against the binary JOBSCOPE_BIN names (make
// test-adversarial builds it); without it, go test ./... passes by: the
// suite takes minutes and has its own make target and CI step.
func TestMain(m *testing.M) {
	binary = os.Getenv("JOBSCOPE_BIN")
	if binary == "" {
		fmt.Println("adversarial: JOBSCOPE_BIN not set, suite not run (make test-adversarial)")
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// node is one running jobscope.
type node struct {
	t      *testing.T
	url    string
	cmd    *exec.Cmd
	stderr *bytes.Buffer
	exited chan struct{}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// start runs jobscope with args (plus a free listen address) in its own
// process group and waits until it answers; the test's end kills the group.
func start(t *testing.T, env []string, args ...string) *node {
	t.Helper()
	addr := freeAddr(t)
	cmd := exec.Command(binary, append([]string{"--web.listen-address=" + addr, "--log.level=warn"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	n := &node{t: t, url: "http://" + addr, cmd: cmd, stderr: &bytes.Buffer{}, exited: make(chan struct{})}
	cmd.Stderr = &lockedWriter{w: n.stderr}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait(); close(n.exited) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-n.exited
	})
	for range 200 {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return n
		}
		select {
		case <-n.exited:
			t.Fatalf("jobscope exited at start: %s", n.stderr)
		case <-time.After(25 * time.Millisecond):
		}
	}
	t.Fatalf("jobscope does not listen on %s", addr)
	return nil
}

// lockedWriter keeps the child's stderr safe to read while it writes.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// scrape gets /metrics with a timeout header, as Prometheus does.
func (n *node) scrape(timeout time.Duration) (status int, body string, took time.Duration) {
	n.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout+5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", n.url+"/metrics", nil)
	req.Header.Set("X-Prometheus-Scrape-Timeout-Seconds", strconv.FormatFloat(timeout.Seconds(), 'f', 3, 64))
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		n.t.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		n.t.Fatalf("scrape body: %v", err)
	}
	return resp.StatusCode, string(b), time.Since(start)
}

// mustScrape scrapes and checks the exposition: status 200, no duplicate
// series, and returns the samples.
func (n *node) mustScrape(timeout time.Duration) (map[string]float64, time.Duration) {
	n.t.Helper()
	status, body, took := n.scrape(timeout)
	if status != 200 {
		n.t.Fatalf("scrape: status %d: %.300s", status, body)
	}
	return testutil.Samples(n.t, []byte(body)), took
}

// count is the number of series of the metric name.
func count(s map[string]float64, name string) int {
	n := 0
	for k := range s {
		if strings.HasPrefix(k, name+"{") || k == name {
			n++
		}
	}
	return n
}

// noCounterDecrease fails when a counter present in both scrapes went down.
func noCounterDecrease(t *testing.T, before, after map[string]float64) {
	t.Helper()
	for k, v := range after {
		name, _, _ := strings.Cut(k, "{")
		if !strings.HasSuffix(name, "_total") || strings.HasPrefix(name, "go_") || strings.HasPrefix(name, "process_") {
			continue
		}
		if old, ok := before[k]; ok && v < old {
			t.Errorf("counter went down: %s %v -> %v", k, old, v)
		}
	}
}

// tree writes the generated v2 node of n jobs on tmpfs and returns its
// root and the node flags for it (no ebpf, gpu or squeue).
func tree(t *testing.T, n int) (root string, args []string) {
	t.Helper()
	root, err := os.MkdirTemp(fixturegen.BenchDir(), "jobscope-adv-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	if err := fixturegen.V2Node(root, n); err != nil {
		t.Fatal(err)
	}
	return root, []string{"--path.cgroupfs=" + root, "--path.procfs=" + t.TempDir(), "--path.sysfs=" + t.TempDir(),
		"--slurm.job-props-dir=" + t.TempDir(), "--slurm.node-metadata.squeue=false",
		"--collector.ebpf=false", "--collector.gpu=false", "--collector.power=false"}
}

func jobDir(root string, i int) string {
	return filepath.Join(root, "system.slice", "slurmstepd.scope", fmt.Sprintf("job_%d", 1000+i))
}

// rssKiB is the resident memory of pid.
func rssKiB(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^VmRSS:\s+(\d+) kB`).FindSubmatch(b)
	if m == nil {
		t.Fatal("no VmRSS")
	}
	v, _ := strconv.Atoi(string(m[1]))
	return v
}

// report prints one measured figure in a form the docs table is built from.
func report(t *testing.T, format string, a ...any) {
	t.Helper()
	t.Logf("adversarial: "+format, a...)
}
