// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"io"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jobscope/jobscope/collector"
)

// demoSeries is one scrape of the demo node at --metrics.level=full: per
// job, metric name plus its non-identity labels, to value.
type demoSeries map[string]map[string]float64

var seriesLine = regexp.MustCompile(`^(slurm_job_[a-z_]+)\{(.*)\} (\S+)$`)
var labelPair = regexp.MustCompile(`([a-z_]+)="([^"]*)"`)

func scrapeDemo(t *testing.T, extra ...string) demoSeries {
	t.Helper()
	srv := demoServer(t, extra...)
	defer srv.Close()
	return parseDemo(t, get(t, srv.URL+"/metrics"))
}

// demoServer serves the demo node at --metrics.level=full; extra flags
// come after demoOptions' and win.
func demoServer(t *testing.T, extra ...string) *httptest.Server {
	t.Helper()
	o, set, fs := demoOptions(t)
	if err := fs.Parse(append([]string{"--metrics.level=full"}, extra...)); err != nil {
		t.Fatal(err)
	}
	logger, _ := newLogger("error", "json", io.Discard)
	exp, release, err := buildExporter(o, set, collector.ModeNode, logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(release)
	return httptest.NewServer(newMux(exp, o, logger))
}

func parseDemo(t *testing.T, body string) demoSeries {
	t.Helper()
	out := demoSeries{}
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		m := seriesLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		v, err := strconv.ParseFloat(m[3], 64)
		if err != nil {
			t.Fatalf("%s: %v", sc.Text(), err)
		}
		key, job := m[1], ""
		for _, p := range labelPair.FindAllStringSubmatch(m[2], -1) {
			switch p[1] {
			case "jobid":
				job = p[2]
			case "user", "account":
			default:
				key += "," + p[1] + "=" + p[2]
			}
		}
		if out[job] == nil {
			out[job] = map[string]float64{}
		}
		out[job][key] = v
	}
	return out
}

// The demo node's values could come from one kernel: what `make demo` and
// the README's sample report show must not contradict itself.
func TestDemoFixtureConsistent(t *testing.T) {
	jobs := scrapeDemo(t)
	if len(jobs) != 3 {
		t.Fatalf("demo jobs: %d, want 3", len(jobs))
	}
	for id, s := range jobs {
		v := func(key string) float64 {
			x, ok := s[key]
			if !ok {
				t.Errorf("job %s: no %s", id, key)
			}
			return x
		}
		stat := func(typ string) float64 { return v("slurm_job_memory_stat_bytes,type=" + typ) }
		le := func(what string, a, b float64) {
			if a > b {
				t.Errorf("job %s: %s: %g > %g", id, what, a, b)
			}
		}
		usage, peak := v("slurm_job_memory_usage_bytes"), v("slurm_job_memory_peak_bytes")
		le("anon <= memory usage", stat("anon"), usage)
		le("peak >= usage", usage, peak)
		// memory.current is charged anon, file (page cache, shmem included)
		// and kernel memory, sockets too: their sum is it, to a few pages.
		charged := stat("anon") + stat("file") + stat("kernel") + stat("sock")
		le("anon+file+kernel+sock <= usage", charged, usage)
		le("usage - (anon+file+kernel+sock) <= 1% of usage", usage-charged, usage/100)
		le("anon_thp <= anon", stat("anon_thp"), stat("anon"))
		le("shmem <= file", stat("shmem"), stat("file"))
		le("file_mapped <= file", stat("file_mapped"), stat("file"))
		le("file_dirty <= file", stat("file_dirty"), stat("file"))
		le("anon LRUs <= anon + shmem", stat("active_anon")+stat("inactive_anon"), stat("anon")+stat("shmem"))
		le("file LRUs <= file - shmem", stat("active_file")+stat("inactive_file"), stat("file")-stat("shmem"))
		if limit, ok := s["slurm_job_memory_limit_bytes"]; ok {
			le("peak <= limit", peak, limit)
			// An OOM kill inside the cgroup happens at its limit.
			if v("slurm_job_memory_events_total,event=oom_kill") > 0 {
				le("an OOM-killed job's peak reached its limit", limit, peak)
			}
		} else if v("slurm_job_memory_events_total,event=max") > 0 {
			t.Errorf("job %s: hit memory.max without a limit", id)
		}
		cpu := v("slurm_job_cpu_usage_seconds_total")
		split := v("slurm_job_cpu_seconds_total,mode=user") + v("slurm_job_cpu_seconds_total,mode=system")
		if d := cpu - split; d > 0.001*cpu || d < -0.001*cpu {
			t.Errorf("job %s: user + system = %g s, usage %g s", id, split, cpu)
		}
		var procCPU float64
		for k, x := range s {
			if strings.HasPrefix(k, "slurm_job_process_cpu_seconds_total,") {
				procCPU += x
			}
		}
		le("its processes' CPU <= the cgroup's", procCPU, cpu)
		le("threads <= pids.current", v("slurm_job_threads,state=all"), v("slurm_job_pids"))
		for _, r := range []string{"cpu", "memory", "io"} {
			le(r+" pressure full <= some", v("slurm_job_pressure_stalled_seconds_total,level=full,resource="+r),
				v("slurm_job_pressure_stalled_seconds_total,level=some,resource="+r))
		}
	}
}

// On the live demo node (`make demo`: test/demo/livenode advances the
// fixture's CPU time and RAPL counters) every job is given energy, and no
// more than the node measured.
func TestDemoLiveEnergy(t *testing.T) {
	if testing.Short() {
		t.Skip("builds test/demo/livenode")
	}
	root := filepath.Join(t.TempDir(), "demo")
	start := strconv.FormatInt(time.Now().Unix(), 10)
	live := func(elapsed string) {
		cmd := exec.Command("go", "run", "./test/demo/livenode", "-dir", root, "-once", "-start", start, "-elapsed", elapsed)
		cmd.Dir = filepath.Join("..", "..")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("livenode: %v\n%s", err, out)
		}
	}
	live("0s")
	ipmi, _ := filepath.Abs(filepath.Join("..", "..", "testdata", "power", "ipmi", "demo.txt"))
	srv := demoServer(t, "--path.cgroupfs="+filepath.Join(root, "cgroup"), "--path.procfs="+filepath.Join(root, "proc"),
		"--path.sysfs="+filepath.Join(root, "sys"), "--slurm.job-props-dir="+filepath.Join(root, "props"),
		"--collector.power.ipmi=command", "--collector.power.ipmi-command=cat "+ipmi, "--collector.power.emissions.country=FR", "--collector.gpu=false")
	defer srv.Close()
	get(t, srv.URL+"/metrics") // the first scrape sets the baselines
	time.Sleep(1100 * time.Millisecond)
	live("1s")
	body := get(t, srv.URL+"/metrics")
	jobs := parseDemo(t, body)
	for _, src := range []string{"ipmi", "rapl_cpu"} {
		var sum float64
		for id, s := range jobs {
			e := s["slurm_job_energy_joules_total,source="+src]
			if e <= 0 {
				t.Errorf("job %s: %s energy %g, want > 0", id, src, e)
			}
			sum += e
		}
		unattributed := regexp.MustCompile(`jobscope_energy_unattributed_joules_total\{source="` + src + `"\} (\S+)`).FindStringSubmatch(body)
		if unattributed == nil {
			t.Fatalf("no unattributed %s energy in\n%s", src, body)
		}
		if u, _ := strconv.ParseFloat(unattributed[1], 64); u < 0 || sum <= 0 {
			t.Errorf("%s: jobs %g J, unattributed %g J", src, sum, u)
		}
	}
	for id, s := range jobs {
		if s["slurm_job_emissions_grams_total"] <= 0 {
			t.Errorf("job %s: no emissions", id)
		}
	}
}
