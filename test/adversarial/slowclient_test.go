// SPDX-License-Identifier: Apache-2.0

package adversarial

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	fixturegen "github.com/jobscope/jobscope/test/gen/fixture"
)

// bigNode is a v2 node of n slim jobs (job-level files only, copied from
// one generated job: seconds, not the minutes a full tree of 1,300 jobs
// takes) and its flags at --metrics.level=full: 1,300 jobs answer ~6.2 MB.
func bigNode(t *testing.T, n int) []string {
	t.Helper()
	root, err := os.MkdirTemp(fixturegen.BenchDir(), "jobscope-adv-big-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	tmpl := filepath.Join(t.TempDir(), "tmpl")
	if err := fixturegen.V2Node(tmpl, 1); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(jobDir(root, 0)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := copyTree(filepath.Join(tmpl, "cgroup.controllers"), filepath.Join(root, "cgroup.controllers")); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := slimJob(jobDir(tmpl, 0), jobDir(root, i)); err != nil {
			t.Fatal(err)
		}
	}
	return []string{"--path.cgroupfs=" + root, "--path.procfs=" + t.TempDir(), "--path.sysfs=" + t.TempDir(),
		"--slurm.job-props-dir=" + t.TempDir(), "--slurm.node-metadata.squeue=false",
		"--collector.ebpf=false", "--collector.gpu=false", "--collector.power=false", "--metrics.level=full"}
}

// stuckClient asks for /metrics and never reads: a socket with a 4 KiB
// receive buffer, so the answer stays in the server's writes.
func stuckClient(t *testing.T, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		if err != nil {
			return err
		}
		return serr
	}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Error(err)
		return nil
	}
	fmt.Fprintf(c, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
	return c
}

// Two clients that ask for a 6 MB answer and never read: each loses its
// connection at the write bound and holds no scrape slot meanwhile, and
// reconnects at once; normal scrapes get 200 all along, for three write
// bounds. (main's binary kept the slot while writing: both slots held,
// every other scrape 503.) The server's bound on one request is the
// scrape timeout (the answer is ready by then) plus the write time
// (scrape timeout + 1 s): on a loaded machine a 1,350-job scrape uses its
// whole timeout, so a stuck client that looked at the write time alone
// read its answer in time, and a normal scrape's 6 MB took longer than the
// scrape timeout to arrive.
func TestNonReadingClients(t *testing.T) {
	const scrapeTimeout, writeBound = 3 * time.Second, 4 * time.Second
	const requestBound = scrapeTimeout + writeBound
	n := start(t, nil, append(bigNode(t, 1350), fmt.Sprintf("--web.scrape-timeout=%s", scrapeTimeout))...)
	status, body, _ := n.scrape(scrapeTimeout)
	if status != 200 || len(body) < 6_000_000 {
		t.Fatalf("first scrape: status %d, %d bytes; the case needs a 200 of >= 6 MB", status, len(body))
	}
	full := len(body)
	addr := strings.TrimPrefix(n.url, "http://")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var cut, got []int // bytes each stuck client could still read after the bound
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				c := stuckClient(t, addr)
				if c == nil {
					return
				}
				time.Sleep(requestBound + 2*time.Second)
				_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
				k, err := io.Copy(io.Discard, c)
				c.Close()
				mu.Lock()
				got = append(got, int(k))
				if err == nil || !isTimeout(err) {
					cut = append(cut, int(k)) // EOF or reset: the server let it go
				}
				mu.Unlock()
			}
		})
	}
	time.Sleep(500 * time.Millisecond) // both stuck clients are being answered
	var took []time.Duration
	for end := time.Now().Add(3 * requestBound); time.Now().Before(end); time.Sleep(300 * time.Millisecond) {
		status, body, d := n.scrape(scrapeTimeout)
		took = append(took, d.Round(time.Millisecond))
		if status != 200 || len(body) < full/2 {
			t.Errorf("scrape beside two stuck clients: status %d after %v: %.200s", status, d, body)
		} else if d > requestBound {
			t.Errorf("scrape beside two stuck clients took %v, past the server's %v bound", d, requestBound)
		}
	}
	close(stop)
	wg.Wait()
	report(t, "two non-reading clients on a %d-byte answer: %d scrapes meanwhile, times %v; stuck connections: %d, %d closed by the server (bytes read after the bound: %v)",
		full, len(took), took, len(got), len(cut), got)
	if len(cut) != len(got) || len(got) < 2 {
		t.Errorf("%d of %d stuck connections closed by the server", len(cut), len(got))
	}
	for _, k := range got {
		if k >= full {
			t.Errorf("a stuck client read the whole answer (%d bytes) after the write bound: the server kept its connection", k)
		}
	}
}
