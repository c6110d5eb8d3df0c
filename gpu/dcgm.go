// SPDX-License-Identifier: Apache-2.0

package gpu

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// DCGMOptions configure the DCGM backend (flags --gpu.dcgm-*).
type DCGMOptions struct {
	// Address of nv-hostengine: host:port, host (port 5555), or a unix
	// socket path ("/run/..." or "unix:///run/...").
	Address string
	// Profiling watches DCGM's profiling fields (DCGM_FI_PROF_*). Off, or
	// when DCGM refuses them, profiling values come from NVML GPM.
	Profiling bool
	// Interval is how often the host engine samples the watched fields.
	Interval time.Duration
}

// DefaultDCGMAddress is nv-hostengine's default TCP endpoint.
const DefaultDCGMAddress = "localhost:5555"

// dcgmConnectArgs turns an address into go-dcgm's Standalone arguments:
// the address and "1" when it is a unix socket, else "0".
func dcgmConnectArgs(addr string) (string, string, error) {
	switch {
	case addr == "":
		return "", "", fmt.Errorf("empty --gpu.dcgm-address")
	case strings.HasPrefix(addr, "unix://"):
		p := strings.TrimPrefix(addr, "unix://")
		if !strings.HasPrefix(p, "/") {
			return "", "", fmt.Errorf("--gpu.dcgm-address %q: a unix socket needs an absolute path", addr)
		}
		return p, "1", nil
	case strings.HasPrefix(addr, "/"):
		return addr, "1", nil
	}
	return addr, "0", nil
}

// DCGM field ids and types, copied as plain numbers so the translation
// below builds and is tested without cgo; a cgo test checks every id
// against go-dcgm's constants.
const (
	dcgmFieldName        = 50  // DCGM_FI_DEV_NAME
	dcgmFieldNVMLIndex   = 52  // DCGM_FI_DEV_NVML_INDEX
	dcgmFieldUUID        = 54  // DCGM_FI_DEV_UUID
	dcgmFieldMinor       = 55  // DCGM_FI_DEV_MINOR_NUMBER
	dcgmFieldMIGMode     = 67  // DCGM_FI_DEV_MIG_MODE
	dcgmFieldSMClock     = 100 // DCGM_FI_DEV_SM_CLOCK, MHz
	dcgmFieldGPUTemp     = 150 // DCGM_FI_DEV_GPU_TEMP, °C
	dcgmFieldPower       = 155 // DCGM_FI_DEV_POWER_USAGE, W
	dcgmFieldEnergy      = 156 // DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, mJ
	dcgmFieldGPUUtil     = 203 // DCGM_FI_DEV_GPU_UTIL, %
	dcgmFieldMemCopyUtil = 204 // DCGM_FI_DEV_MEM_COPY_UTIL, %
	dcgmFieldXid         = 230 // DCGM_FI_DEV_XID_ERRORS, the last Xid
	dcgmFieldFBTotal     = 250 // DCGM_FI_DEV_FB_TOTAL, MiB
	dcgmFieldFBUsed      = 252 // DCGM_FI_DEV_FB_USED, MiB
	dcgmFieldECCSBE      = 310 // DCGM_FI_DEV_ECC_SBE_VOL_TOTAL
	dcgmFieldECCDBE      = 311 // DCGM_FI_DEV_ECC_DBE_VOL_TOTAL
	dcgmFieldSMActive    = 1002
	dcgmFieldSMOccupancy = 1003
	dcgmFieldTensor      = 1004
	dcgmFieldDRAM        = 1005
	dcgmFieldFP64        = 1006
	dcgmFieldFP32        = 1007
	dcgmFieldFP16        = 1008
	dcgmFieldPCIeTX      = 1009 // bytes/s
	dcgmFieldPCIeRX      = 1010
	dcgmFieldNVLinkTX    = 1011
	dcgmFieldNVLinkRX    = 1012

	dcgmTypeDouble = 'd'
	dcgmTypeInt64  = 'i'
	dcgmTypeString = 's'

	dcgmStatusOK           = 0
	dcgmStatusNotSupported = -6
	dcgmStatusNoData       = -14
	dcgmStatusStale        = -15
	dcgmStatusNotWatched   = -16
	dcgmStatusNoPermission = -17
	dcgmStatusProfNotSupp  = -36
)

// dcgmNumeric maps numeric DCGM fields to Fields with the factor to base
// units.
var dcgmNumeric = map[uint16]struct {
	field Field
	scale float64
}{
	dcgmFieldSMClock:     {SMClockHertz, 1e6},
	dcgmFieldGPUTemp:     {TemperatureCelsius, 1},
	dcgmFieldPower:       {PowerWatts, 1},
	dcgmFieldEnergy:      {EnergyJoules, 1e-3},
	dcgmFieldGPUUtil:     {UtilizationRatio, 0.01},
	dcgmFieldMemCopyUtil: {MemoryUtilRatio, 0.01},
	dcgmFieldFBTotal:     {MemoryTotalBytes, 1 << 20},
	dcgmFieldFBUsed:      {MemoryUsedBytes, 1 << 20},
	dcgmFieldECCSBE:      {ECCCorrected, 1},
	dcgmFieldECCDBE:      {ECCUncorrected, 1},
	dcgmFieldSMActive:    {SMActiveRatio, 1},
	dcgmFieldSMOccupancy: {SMOccupancyRatio, 1},
	dcgmFieldTensor:      {TensorActiveRatio, 1},
	dcgmFieldDRAM:        {DRAMActiveRatio, 1},
	dcgmFieldFP64:        {FP64ActiveRatio, 1},
	dcgmFieldFP32:        {FP32ActiveRatio, 1},
	dcgmFieldFP16:        {FP16ActiveRatio, 1},
	dcgmFieldPCIeTX:      {PCIeTXBytesPerSecond, 1},
	dcgmFieldPCIeRX:      {PCIeRXBytesPerSecond, 1},
	dcgmFieldNVLinkTX:    {NVLinkTXBytesPerSecond, 1},
	dcgmFieldNVLinkRX:    {NVLinkRXBytesPerSecond, 1},
}

// dcgmIdentityFields and dcgmTelemetryFields are watched on every GPU;
// dcgmProfilingFields on GPUs and GPU instances when profiling is on;
// dcgmInstanceFields are read for GPU instances (the rest is per GPU).
var (
	dcgmIdentityFields  = []uint16{dcgmFieldName, dcgmFieldNVMLIndex, dcgmFieldUUID, dcgmFieldMinor, dcgmFieldMIGMode}
	dcgmTelemetryFields = []uint16{dcgmFieldSMClock, dcgmFieldGPUTemp, dcgmFieldPower, dcgmFieldEnergy,
		dcgmFieldGPUUtil, dcgmFieldMemCopyUtil, dcgmFieldFBTotal, dcgmFieldFBUsed, dcgmFieldECCSBE, dcgmFieldECCDBE}
	dcgmProfilingFields = []uint16{dcgmFieldSMActive, dcgmFieldSMOccupancy, dcgmFieldTensor, dcgmFieldDRAM,
		dcgmFieldFP64, dcgmFieldFP32, dcgmFieldFP16, dcgmFieldPCIeTX, dcgmFieldPCIeRX, dcgmFieldNVLinkTX, dcgmFieldNVLinkRX}
	dcgmInstanceFields = []uint16{dcgmFieldUUID, dcgmFieldFBTotal, dcgmFieldFBUsed}
)

// dcgmValue is one DCGM field value without cgo types: the backend copies
// go-dcgm's FieldValue_v2 into it so the translation is a pure function.
type dcgmValue struct {
	Field  uint16
	Type   byte // 'd', 'i' or 's' (DCGM_FT_*)
	Status int  // DCGM_ST_*
	Int    int64
	Float  float64
	Str    string
}

// DCGM marks "no value" inside a successful reply with sentinels just
// below the type's maximum (DCGM_FT_*_BLANK, NOT_FOUND, NOT_SUPPORTED,
// NOT_PERMISSIONED). Values arrive as int64, but fields read from 32-bit
// sources may carry the 32-bit sentinels; those are checked only on
// fields that can never legitimately reach 2^31 (an energy counter in mJ
// passes 0x7ffffff0 after a few hours at 300 W).
const (
	dcgmInt32Blank = 0x7ffffff0
	dcgmInt64Blank = 0x7ffffffffffffff0
	dcgmFP64Blank  = 140737488355328.0 // 2^47
)

// dcgmWide lists integer fields whose real values may exceed 2^31.
var dcgmWide = map[uint16]bool{
	dcgmFieldEnergy: true, dcgmFieldECCSBE: true, dcgmFieldECCDBE: true,
	dcgmFieldPCIeTX: true, dcgmFieldPCIeRX: true, dcgmFieldNVLinkTX: true, dcgmFieldNVLinkRX: true,
}

// blank reports whether v carries no usable value.
func (v dcgmValue) blank() bool {
	switch v.Type {
	case dcgmTypeInt64:
		if v.Int >= dcgmInt64Blank {
			return true
		}
		return !dcgmWide[v.Field] && v.Int >= dcgmInt32Blank && v.Int <= dcgmInt32Blank+3
	case dcgmTypeDouble:
		return v.Float >= dcgmFP64Blank || math.IsNaN(v.Float) || math.IsInf(v.Float, 0)
	case dcgmTypeString:
		return v.Str == "" || (strings.HasPrefix(v.Str, "<<<") && strings.HasSuffix(v.Str, ">>>"))
	}
	return true
}

// silentStatus lists per-value statuses that mean "this device or
// instance does not have it (now)": not an error worth a log line.
func silentStatus(st int) bool {
	switch st {
	case dcgmStatusNotSupported, dcgmStatusNoData, dcgmStatusStale, dcgmStatusNotWatched,
		dcgmStatusNoPermission, dcgmStatusProfNotSupp:
		return true
	}
	return false
}

// applyDCGM fills d from one entity's values and returns the per-value
// errors (statuses other than OK and the silent ones) as names of the
// failed fields, plus whether any profiling value was present.
func applyDCGM(d *Device, vals []dcgmValue) (failed []uint16, profiling bool) {
	if d.Values == nil {
		d.Values = map[Field]float64{}
	}
	for _, v := range vals {
		if v.Status != dcgmStatusOK {
			if !silentStatus(v.Status) {
				failed = append(failed, v.Field)
			}
			continue
		}
		if v.blank() {
			continue
		}
		switch v.Field {
		case dcgmFieldName:
			d.Model = v.Str
			continue
		case dcgmFieldUUID:
			d.UUID = v.Str
			continue
		case dcgmFieldNVMLIndex:
			d.Index = int(v.Int)
			continue
		case dcgmFieldMinor:
			d.Minor = int(v.Int)
			continue
		case dcgmFieldMIGMode:
			d.MIGEnabled = v.Int == 1
			continue
		}
		m, ok := dcgmNumeric[v.Field]
		if !ok {
			continue
		}
		x := v.Float
		if v.Type == dcgmTypeInt64 {
			x = float64(v.Int)
		} else if v.Type != dcgmTypeDouble {
			continue
		}
		d.Values[m.field] = x * m.scale
		if v.Field >= dcgmFieldSMActive && v.Field <= dcgmFieldNVLinkRX {
			profiling = true
		}
	}
	return failed, profiling
}

// dcgmFieldCall names a failed field read in Snapshot.Errors (and so in
// the collector's error cause): "field_<id>".
func dcgmFieldCall(id uint16) string { return fmt.Sprintf("field_%d", id) }

// xidEvents turns the Xid field's samples since the previous scrape into
// events; parent maps a DCGM GPU id to its UUID. DCGM does not say which
// MIG instance an Xid hit, so GPUInstanceID is -1.
func xidEvents(samples []dcgmXidSample, uuidOf map[uint]string) []XidEvent {
	var out []XidEvent
	for _, s := range samples {
		if s.Value.Status != dcgmStatusOK || s.Value.blank() || s.Value.Type != dcgmTypeInt64 || s.Value.Int <= 0 {
			continue
		}
		u, ok := uuidOf[s.GPU]
		if !ok {
			continue
		}
		out = append(out, XidEvent{UUID: u, GPUInstanceID: -1, Xid: uint64(s.Value.Int)})
	}
	return out
}

// dcgmXidSample is one sample of DCGM_FI_DEV_XID_ERRORS on a GPU.
type dcgmXidSample struct {
	GPU   uint
	Value dcgmValue
}
