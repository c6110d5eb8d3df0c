// SPDX-License-Identifier: Apache-2.0

package registry

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jobscope/jobscope/collector"
	gpucoll "github.com/jobscope/jobscope/collector/gpu"
	"github.com/jobscope/jobscope/collector/power"
	"github.com/jobscope/jobscope/collector/provide"
	"github.com/jobscope/jobscope/collector/provide/gpus"
	"github.com/jobscope/jobscope/collector/provide/jobcgroup"
	"github.com/jobscope/jobscope/discovery"
	"github.com/jobscope/jobscope/gpu"
	"github.com/jobscope/jobscope/internal/testutil"
)

// risingGPU is one GPU whose energy counter grows by 100 J per reading.
type risingGPU struct{ n atomic.Int32 }

func (g *risingGPU) Name() string { return "fake" }
func (g *risingGPU) Close() error { return nil }
func (g *risingGPU) Snapshot(context.Context) (*gpu.Snapshot, error) {
	k := float64(g.n.Add(1) - 1)
	return &gpu.Snapshot{Devices: []gpu.Device{{Index: 0, Minor: 0, UUID: "GPU-0", Model: "test",
		Values: map[gpu.Field]float64{gpu.EnergyJoules: 1000 + 100*k}}}}, nil
}

// The gpu and power collectors read the same GPU reading in a scrape: the
// energy power gives the job over an interval is the growth of the counter
// the gpu collector exports for that interval, not one scrape behind.
func TestGPUEnergySameScrape(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "job_7")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	_ = os.WriteFile(filepath.Join(dir, "cpu.stat"), []byte("usage_usec 1000000\n"), 0o644)
	job := &discovery.Job{ID: "7", Version: 2, Dir: dir, Meta: discovery.Meta{User: "u", Account: "a",
		Env: map[string]string{"SLURM_JOB_GPUS": "0"}}}
	now := time.Unix(1_800_000_000, 0)
	env := &collector.Env{SysFS: t.TempDir(), ProcFS: t.TempDir()}
	src := gpus.New()
	src.Opts = gpus.Options{Open: func(gpu.Config) (gpu.Backend, error) { return &risingGPU{}, nil }}
	usage := jobcgroup.New()
	env.Providers = provide.Started(&provide.Env{ProcFS: env.ProcFS}, usage, src)
	g, err := gpucoll.New(env)
	if err != nil {
		t.Fatal(err)
	}
	p, err := power.New(env, power.Options{PerJob: true, IdlePolicy: "capacity", Now: func() time.Time { return now },
		Usage: usage, GPU: src})
	if err != nil {
		t.Fatal(err)
	}
	exp := collector.NewExporter(map[string]collector.Collector{"gpu": g, "power": p}, collector.Options{
		Jobs: func(context.Context, discovery.Problem) []*discovery.Job { return []*discovery.Job{job} }})
	var out string
	for range 2 {
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(exp.Bind(context.Background()))
		out = string(testutil.Exposition(t, reg))
		now = now.Add(10 * time.Second)
	}
	for _, want := range []string{
		`slurm_job_gpu_energy_joules_total{account="a",gpu="0",jobid="7",mig_uuid="",model="test",user="u",uuid="GPU-0"} 1100`,
		`slurm_job_energy_joules_total{account="a",jobid="7",source="gpu",user="u"} 100`,
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("missing %s in\n%s", want, out)
		}
	}
}
