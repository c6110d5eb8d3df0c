// SPDX-License-Identifier: Apache-2.0

//go:build cgo && !nogpu

package gpu

import (
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/jobscope/jobscope/collector"
	"github.com/jobscope/jobscope/collector/collectortest"
	"github.com/jobscope/jobscope/gpu"
	"github.com/jobscope/jobscope/gpu/nvmlmock"
	"github.com/jobscope/jobscope/internal/testutil"
)

// nvmlFixture is gpuFixture with the NVML backend over the mock node. No
// host engine in these tests, whatever the machine has: auto falls back
// to NVML.
func nvmlFixture(t *testing.T, node *nvmlmock.Node) (*collector.Exporter, *collector.Problems) {
	t.Helper()
	var backend gpu.Backend
	open := func(cfg gpu.Config) (gpu.Backend, error) {
		cfg.OpenDCGM = func(*slog.Logger) (gpu.Backend, error) { return nil, errors.New("no nv-hostengine") }
		cfg.OpenNVML = func(log *slog.Logger) (gpu.Backend, error) {
			b, err := gpu.NewNVML(node, log)
			backend = b
			return b, err
		}
		return gpu.Open(cfg)
	}
	exp, problems := gpuFixture(t, "node-v2", open)
	t.Cleanup(func() { backend.Close() })
	return exp, problems
}

// The NVML backend over go-nvml's DGX A100 mock, on the same node as the
// DCGM golden: every NVML-sourced metric, MIG, and the mapping methods.
func TestGPUGoldenNVMLMock(t *testing.T) {
	node := nvmlmock.New()
	node.PIDs[0] = []uint32{3001}
	node.PIDs[4] = []uint32{3102}
	node.PIDs[70] = []uint32{3202}
	exp, problems := nvmlFixture(t, node)
	g := collectortest.Gatherer(exp)
	testutil.Golden(t, filepath.Join("..", "..", "testdata", "gpu", "nvml-v2.golden"), testutil.Exposition(t, g))
	lint(t, g)
	if problems.Count("gpu", "mapping_conflict") == 0 {
		t.Error("the GPU 4 conflict was not reported")
	}
}

// A GPU that falls off the bus is exported as lost under its identity, with
// no values; the job holding it keeps its info series; the other GPUs go on.
func TestGPULostExported(t *testing.T) {
	node := nvmlmock.New()
	exp, problems := nvmlFixture(t, node)
	g := collectortest.Gatherer(exp)
	testutil.Exposition(t, g)
	get := node.DeviceGetHandleByIndexFunc
	node.DeviceGetHandleByIndexFunc = func(i int) (nvml.Device, nvml.Return) {
		if i == 2 {
			return nil, nvml.ERROR_GPU_IS_LOST
		}
		return get(i)
	}
	out := string(testutil.Exposition(t, g))
	lost, other := nvmlmock.UUID(2), nvmlmock.UUID(1)
	for _, want := range []string{
		`jobscope_gpu_lost{gpu="2",mig_uuid="",model="Mock NVIDIA A100-SXM4-40GB",uuid="` + lost + `"} 1`,
		`jobscope_gpu_lost{gpu="1",mig_uuid="",model="Mock NVIDIA A100-SXM4-40GB",uuid="` + other + `"} 0`,
		`slurm_job_gpu_info{account="chemistry",gpu="2",jobid="301",method="mapping_dir"`,
		`jobscope_scrape_collector_success{collector="gpu"} 1`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("lacks %s", want)
		}
	}
	if strings.Contains(out, `slurm_job_gpu_power_watts{account="chemistry",gpu="2"`) {
		t.Error("a lost GPU still has values")
	}
	if !strings.Contains(out, `jobscope_gpu_power_watts{gpu="1"`) && !strings.Contains(out, `slurm_job_gpu_power_watts{account="physics",gpu="1"`) {
		t.Error("GPU 1 lost its values with GPU 2")
	}
	if problems.Count("gpu", "gpu_lost") != 1 {
		t.Errorf("gpu_lost counted %v times", problems.Count("gpu", "gpu_lost"))
	}
}
