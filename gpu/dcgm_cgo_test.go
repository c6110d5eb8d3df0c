// SPDX-License-Identifier: Apache-2.0

//go:build cgo && !nogpu

package gpu

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/NVIDIA/go-dcgm/pkg/dcgm"

	"github.com/jobscope/jobscope/gpu/nvmlmock"
)

// The pure translation uses plain numbers; they must be go-dcgm's.
func TestDCGMFieldIDsMatchGoDCGM(t *testing.T) {
	for ours, theirs := range map[uint16]dcgm.Short{
		dcgmFieldName: dcgm.DCGM_FI_DEV_NAME, dcgmFieldNVMLIndex: dcgm.DCGM_FI_DEV_NVML_INDEX,
		dcgmFieldUUID: dcgm.DCGM_FI_DEV_UUID, dcgmFieldMinor: dcgm.DCGM_FI_DEV_MINOR_NUMBER,
		dcgmFieldMIGMode: dcgm.DCGM_FI_DEV_MIG_MODE, dcgmFieldSMClock: dcgm.DCGM_FI_DEV_SM_CLOCK,
		dcgmFieldGPUTemp: dcgm.DCGM_FI_DEV_GPU_TEMP, dcgmFieldPower: dcgm.DCGM_FI_DEV_POWER_USAGE,
		dcgmFieldEnergy: dcgm.DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, dcgmFieldGPUUtil: dcgm.DCGM_FI_DEV_GPU_UTIL,
		dcgmFieldMemCopyUtil: dcgm.DCGM_FI_DEV_MEM_COPY_UTIL, dcgmFieldXid: dcgm.DCGM_FI_DEV_XID_ERRORS,
		dcgmFieldFBTotal: dcgm.DCGM_FI_DEV_FB_TOTAL, dcgmFieldFBUsed: dcgm.DCGM_FI_DEV_FB_USED,
		dcgmFieldECCSBE: dcgm.DCGM_FI_DEV_ECC_SBE_VOL_TOTAL, dcgmFieldECCDBE: dcgm.DCGM_FI_DEV_ECC_DBE_VOL_TOTAL,
		dcgmFieldSMActive: dcgm.DCGM_FI_PROF_SM_ACTIVE, dcgmFieldSMOccupancy: dcgm.DCGM_FI_PROF_SM_OCCUPANCY,
		dcgmFieldTensor: dcgm.DCGM_FI_PROF_PIPE_TENSOR_ACTIVE, dcgmFieldDRAM: dcgm.DCGM_FI_PROF_DRAM_ACTIVE,
		dcgmFieldFP64: dcgm.DCGM_FI_PROF_PIPE_FP64_ACTIVE, dcgmFieldFP32: dcgm.DCGM_FI_PROF_PIPE_FP32_ACTIVE,
		dcgmFieldFP16: dcgm.DCGM_FI_PROF_PIPE_FP16_ACTIVE, dcgmFieldPCIeTX: dcgm.DCGM_FI_PROF_PCIE_TX_BYTES,
		dcgmFieldPCIeRX: dcgm.DCGM_FI_PROF_PCIE_RX_BYTES, dcgmFieldNVLinkTX: dcgm.DCGM_FI_PROF_NVLINK_TX_BYTES,
		dcgmFieldNVLinkRX: dcgm.DCGM_FI_PROF_NVLINK_RX_BYTES,
	} {
		if ours != uint16(theirs) {
			t.Errorf("field %d: go-dcgm says %d", ours, theirs)
		}
	}
	for ours, theirs := range map[int]int{
		dcgmStatusNotSupported: dcgm.DCGM_ST_NOT_SUPPORTED, dcgmStatusNoData: dcgm.DCGM_ST_NO_DATA,
		dcgmStatusStale: dcgm.DCGM_ST_STALE_DATA, dcgmStatusNotWatched: dcgm.DCGM_ST_NOT_WATCHED,
		dcgmStatusNoPermission: dcgm.DCGM_ST_NO_PERMISSION, dcgmStatusProfNotSupp: dcgm.DCGM_ST_PROFILING_NOT_SUPPORTED,
	} {
		if ours != theirs {
			t.Errorf("status %d: go-dcgm says %d", ours, theirs)
		}
	}
	if dcgmTypeInt64 != dcgm.DCGM_FT_INT64 || dcgmTypeDouble != dcgm.DCGM_FT_DOUBLE || dcgmTypeString != dcgm.DCGM_FT_STRING ||
		dcgmInt64Blank != dcgm.DCGM_FT_INT64_BLANK || dcgmInt32Blank != dcgm.DCGM_FT_INT32_BLANK || dcgmFP64Blank != dcgm.DCGM_FT_FP64_BLANK {
		t.Error("field types or blank sentinels differ from go-dcgm's")
	}
}

// libdcgmPresent looks for libdcgm.so.4 where the dynamic loader would,
// without loading it.
func libdcgmPresent() bool {
	dirs := []string{"/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/local/lib", "/lib64", "/lib"}
	dirs = append(dirs, filepath.SplitList(os.Getenv("LD_LIBRARY_PATH"))...)
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "libdcgm.so.4")); err == nil {
			return true
		}
	}
	return false
}

// Without libdcgm, go-dcgm's Init fails at dlopen and nothing else is
// called: a clean "no device" error, no crash, and auto goes on to NVML.
func TestOpenDCGMWithoutLibrary(t *testing.T) {
	if libdcgmPresent() {
		t.Skip("libdcgm.so.4 is installed here; this test covers its absence")
	}
	for i := 0; i < 2; i++ { // a second try must behave the same
		b, err := openDCGM(DCGMOptions{Address: "127.0.0.1:5555", Profiling: true}, nil)
		if b != nil || !errors.Is(err, ErrNoDevice) || !strings.Contains(err.Error(), "libdcgm") {
			t.Fatalf("try %d: %v, %v", i, b, err)
		}
	}
	b, err := Open(Config{Backend: "auto", OpenNVML: fakeOpener("nvml", nil)})
	if err != nil || b.Name() != "nvml" {
		t.Fatalf("auto: %v, %v", b, err)
	}
	if _, err := openDCGM(DCGMOptions{Address: "unix://relative"}, nil); err == nil || errors.Is(err, ErrNoDevice) {
		t.Errorf("a bad address is a configuration error: %v", err)
	}
}

// The NVML helper adds what DCGM lacks: PIDs, MIG UUIDs by instance ids.
func TestDCGMNVMLHelper(t *testing.T) {
	node := nvmlmock.New()
	node.PIDs[2] = []uint32{4242}
	h := newNVMLHelper(node, slog.New(slog.DiscardHandler))
	if h == nil {
		t.Fatal("helper not opened")
	}
	defer h.close()
	snap := &Snapshot{}
	d := Device{UUID: nvmlmock.UUID(2), Values: map[Field]float64{}}
	h.fill(snap, &d, true)
	if len(d.PIDs) != 1 || d.PIDs[0] != 4242 || len(snap.Errors) != 0 {
		t.Errorf("pids %v errors %v", d.PIDs, snap.Errors)
	}
	node.PIDs[71] = []uint32{5151}
	m := Device{}
	if !h.fillMIG(snap, nvmlmock.UUID(7), 2, 0, &m) || m.UUID != nvmlmock.MIGUUID(1) || len(m.PIDs) != 1 || m.PIDs[0] != 5151 {
		t.Errorf("MIG gi 2: %+v", m)
	}
	if h.fillMIG(snap, nvmlmock.UUID(7), 5, 0, &m) || h.fillMIG(snap, nvmlmock.UUID(7), 2, 1, &m) {
		t.Error("found a MIG instance that does not exist")
	}
	if h.fillMIG(snap, "GPU-nope", 1, 0, &m) {
		t.Error("found an instance on an unknown parent")
	}
	h.fill(snap, &Device{UUID: "GPU-nope"}, false)
	if len(snap.Errors) != 1 || snap.Errors[0].Call != "DeviceGetHandleByUUID" {
		t.Errorf("errors %v", snap.Errors)
	}
}
