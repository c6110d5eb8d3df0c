// SPDX-License-Identifier: Apache-2.0

package gpu

import (
	"errors"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jobscope/jobscope/collector/collectortest"
	"github.com/jobscope/jobscope/gpu"
	"github.com/jobscope/jobscope/internal/testutil"
)

// gauge returns the value of the first series of out whose line starts
// with prefix (name and labels as exposed), failing when there is none.
func gauge(t *testing.T, out, prefix string) float64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(prefix) + `[^\n]* ([-0-9.e+]+)$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no series %s in\n%s", prefix, out)
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// nv-hostengine goes away and no NVML answers: the last snapshot is served
// again, its age says how old, the cause is counted, the scrape succeeds.
func TestGPUDCGMAwayServesLastSnapshot(t *testing.T) {
	dcgm, open := fakeDCGM(t)
	noNVML := func(cfg gpu.Config) (gpu.Backend, error) {
		cfg.OpenNVML = func(*slog.Logger) (gpu.Backend, error) { return nil, errors.New("no libnvidia-ml") }
		return open(cfg)
	}
	exp, problems := gpuFixture(t, "node-v2", noNVML)
	g := collectortest.Gatherer(exp)
	out := string(testutil.Exposition(t, g))
	if v := gauge(t, out, "jobscope_gpu_snapshot_age_seconds"); v != 0 {
		t.Fatalf("fresh snapshot has age %v", v)
	}
	temp := `slurm_job_gpu_temperature_celsius{account="physics",gpu="0"`
	want := gauge(t, out, temp)

	dcgm.SetError(errors.New("host engine connection lost"))
	time.Sleep(10 * time.Millisecond)
	out = string(testutil.Exposition(t, g))
	if !strings.Contains(out, `jobscope_scrape_collector_success{collector="gpu"} 1`) {
		t.Errorf("serving the last snapshot must not fail the scrape:\n%s", out)
	}
	if v := gauge(t, out, "jobscope_gpu_snapshot_age_seconds"); v < 0.01 {
		t.Errorf("stale snapshot has age %v, want >= 0.01 s", v)
	}
	if got := gauge(t, out, temp); got != want {
		t.Errorf("stale temperature %v, want the last value %v", got, want)
	}
	if problems.Count("gpu", "stale_snapshot") != 1 {
		t.Errorf("stale_snapshot counted %v times, want 1", problems.Count("gpu", "stale_snapshot"))
	}
}

// While DCGM is away NVML answers, and jobscope_gpu_info says which backend
// the values came from.
func TestGPUDCGMAwayNVMLAnswers(t *testing.T) {
	dcgm, open := fakeDCGM(t)
	nvmlSnap := gpu.NewFake("nvml", gpu.Snapshot{Devices: []gpu.Device{{Index: 1, UUID: "GPU-00000000-0000-4000-8000-000000000001", Model: "NVIDIA A100-SXM4-40GB",
		Values: map[gpu.Field]float64{gpu.TemperatureCelsius: 111}}}})
	withNVML := func(cfg gpu.Config) (gpu.Backend, error) {
		cfg.OpenNVML = func(*slog.Logger) (gpu.Backend, error) { return nvmlSnap, nil }
		return open(cfg)
	}
	exp, _ := gpuFixture(t, "node-v2", withNVML)
	g := collectortest.Gatherer(exp)
	if out := string(testutil.Exposition(t, g)); !strings.Contains(out, `backend="dcgm"`) {
		t.Fatalf("healthy DCGM not named:\n%s", out)
	}
	dcgm.SetError(errors.New("host engine connection lost"))
	out := string(testutil.Exposition(t, g))
	if !strings.Contains(out, `jobscope_gpu_info{backend="nvml",gpu="1"`) || strings.Contains(out, `backend="dcgm"`) {
		t.Errorf("NVML answering for DCGM is not named in jobscope_gpu_info:\n%s", out)
	}
	if gauge(t, out, `slurm_job_gpu_temperature_celsius{account="physics",gpu="1"`) != 111 {
		t.Errorf("values are not NVML's")
	}
	if gauge(t, out, "jobscope_gpu_snapshot_age_seconds") != 0 {
		t.Errorf("NVML's values are current, not stale")
	}
}
