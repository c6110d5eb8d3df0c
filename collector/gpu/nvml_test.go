//go:build cgo && !nogpu

package gpu

import (
	"errors"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/jobscope/jobscope/collector/collectortest"
	"github.com/jobscope/jobscope/gpu"
	"github.com/jobscope/jobscope/gpu/nvmlmock"
	"github.com/jobscope/jobscope/internal/testutil"
)

// The NVML backend over go-nvml's DGX A100 mock, on the same node as the
// DCGM golden: every NVML-sourced metric, MIG, and the mapping methods.
func TestGPUGoldenNVMLMock(t *testing.T) {
	node := nvmlmock.New()
	node.PIDs[0] = []uint32{3001}
	node.PIDs[4] = []uint32{3102}
	node.PIDs[70] = []uint32{3202}
	var backend gpu.Backend
	open := func(cfg gpu.Config) (gpu.Backend, error) {
		// No host engine in this test, whatever the machine has: auto falls back to NVML.
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
	g := collectortest.Gatherer(exp)
	testutil.Golden(t, filepath.Join("..", "..", "testdata", "gpu", "nvml-v2.golden"), testutil.Exposition(t, g))
	lint(t, g)
	if problems.Count("gpu", "mapping_conflict") == 0 {
		t.Error("the GPU 4 conflict was not reported")
	}
}
