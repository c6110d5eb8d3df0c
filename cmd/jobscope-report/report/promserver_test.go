// SPDX-License-Identifier: Apache-2.0

package report

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// livePrometheus is a real Prometheus over the backfilled scenario, with
// the jobscope-usage rules evaluated over it.
type livePrometheus struct {
	url  string
	cmd  *exec.Cmd
	dir  string
	port int
}

func tool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("-record needs %s (Debian: apt-get install prometheus)", name)
	}
	return p
}

func run(t *testing.T, name string, args ...string) {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// needPrometheus finds prometheus and promtool for a test that runs them:
// it skips without them, unless JOBSCOPE_REQUIRE_PROMTOOL says CI has them.
func needPrometheus(t *testing.T) {
	t.Helper()
	for _, name := range []string{"promtool", "prometheus"} {
		if _, err := exec.LookPath(name); err != nil {
			if os.Getenv("JOBSCOPE_REQUIRE_PROMTOOL") != "" {
				t.Fatalf("%s not found and JOBSCOPE_REQUIRE_PROMTOOL is set (Debian: apt-get install prometheus)", name)
			}
			t.Skipf("%s not installed (Debian: apt-get install prometheus): this test needs a real Prometheus", name)
		}
	}
}

// startScenarioPrometheus serves the recorded fixture's scenario.
func startScenarioPrometheus(t *testing.T) *livePrometheus {
	return startPrometheus(t, scenarioJobs(), scenarioNow)
}

// startPrometheus backfills the jobs' series, starts Prometheus on them,
// backfills the usage rules through it (rules never evaluate backfilled
// history themselves) up to now and restarts it with both.
func startPrometheus(t *testing.T, jobs []simJob, now time.Time) *livePrometheus {
	promtool, prometheus := tool(t, "promtool"), tool(t, "prometheus")
	dir := t.TempDir()
	om := filepath.Join(dir, "scenario.om")
	f, err := os.Create(om)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeOpenMetrics(f, jobs); err != nil {
		t.Fatal(err)
	}
	f.Close()
	data := filepath.Join(dir, "data")
	run(t, promtool, "tsdb", "create-blocks-from", "openmetrics", om, data)
	rules, err := filepath.Abs("../../../contrib/prometheus/" + usageRulesFile)
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "prometheus.yml")
	conf := fmt.Sprintf("global:\n  evaluation_interval: 60s\nrule_files:\n  - %s\n", rules)
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	lp := &livePrometheus{dir: dir, port: freePort(t)}
	lp.url = "http://127.0.0.1:" + strconv.Itoa(lp.port)
	start := func() {
		lp.cmd = exec.Command(prometheus, "--config.file="+cfg, "--storage.tsdb.path="+data,
			"--storage.tsdb.retention.time=20y", "--web.listen-address=127.0.0.1:"+strconv.Itoa(lp.port))
		lp.cmd.Stdout, _ = os.Create(filepath.Join(dir, "prometheus.log"))
		lp.cmd.Stderr = lp.cmd.Stdout
		if err := lp.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 300; i++ {
			if resp, err := http.Get(lp.url + "/-/ready"); err == nil {
				resp.Body.Close()
				if resp.StatusCode == 200 {
					return
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Fatalf("prometheus did not become ready (log in %s)", dir)
	}
	stop := func() {
		lp.cmd.Process.Signal(os.Interrupt)
		lp.cmd.Wait()
	}
	start()
	first := now
	for _, j := range jobs {
		if j.start.Before(first) {
			first = j.start
		}
	}
	ruleData := filepath.Join(dir, "rules")
	run(t, promtool, "tsdb", "create-blocks-from", "rules", "--url="+lp.url, "--eval-interval=60s",
		"--start="+first.Add(-time.Hour).Format(time.RFC3339), "--end="+now.Format(time.RFC3339),
		"--output-dir="+ruleData, rules)
	stop()
	blocks, err := os.ReadDir(ruleData)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range blocks {
		if err := os.Rename(filepath.Join(ruleData, b.Name()), filepath.Join(data, b.Name())); err != nil {
			t.Fatal(err)
		}
	}
	start()
	t.Cleanup(stop)
	return lp
}
