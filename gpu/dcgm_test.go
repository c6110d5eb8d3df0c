// SPDX-License-Identifier: Apache-2.0

package gpu

import (
	"math"
	"reflect"
	"testing"
)

func TestDCGMConnectArgs(t *testing.T) {
	for _, tc := range []struct {
		in, addr, sock string
		bad            bool
	}{
		{"localhost:5555", "localhost:5555", "0", false},
		{"10.0.0.1", "10.0.0.1", "0", false},
		{"/run/nvidia-dcgm.sock", "/run/nvidia-dcgm.sock", "1", false},
		{"unix:///run/dcgm.sock", "/run/dcgm.sock", "1", false},
		{"unix://relative", "", "", true},
		{"", "", "", true},
	} {
		a, s, err := dcgmConnectArgs(tc.in)
		if (err != nil) != tc.bad || a != tc.addr || s != tc.sock {
			t.Errorf("%q: %q %q %v", tc.in, a, s, err)
		}
	}
}

func i64(f uint16, v int64) dcgmValue      { return dcgmValue{Field: f, Type: dcgmTypeInt64, Int: v} }
func f64(f uint16, v float64) dcgmValue    { return dcgmValue{Field: f, Type: dcgmTypeDouble, Float: v} }
func str(f uint16, v string) dcgmValue     { return dcgmValue{Field: f, Type: dcgmTypeString, Str: v} }
func status(v dcgmValue, st int) dcgmValue { v.Status = st; return v }

// Every DCGM field jobscope reads, in DCGM's units, becomes the gpu
// interface's base units; blanks, sentinels and "not supported" leave the
// value out silently; other statuses are reported.
func TestApplyDCGM(t *testing.T) {
	for _, tc := range []struct {
		name   string
		in     []dcgmValue
		want   Device
		failed []uint16
		prof   bool
	}{
		{
			name: "identity and telemetry",
			in: []dcgmValue{
				str(dcgmFieldUUID, "GPU-1"), str(dcgmFieldName, "NVIDIA H100"), i64(dcgmFieldNVMLIndex, 3),
				i64(dcgmFieldMinor, 5), i64(dcgmFieldMIGMode, 0),
				i64(dcgmFieldSMClock, 1980), i64(dcgmFieldGPUTemp, 41), f64(dcgmFieldPower, 312.5),
				i64(dcgmFieldEnergy, 7_500_000_000), i64(dcgmFieldGPUUtil, 87), i64(dcgmFieldMemCopyUtil, 12),
				i64(dcgmFieldFBTotal, 81559), i64(dcgmFieldFBUsed, 1024), i64(dcgmFieldECCSBE, 2), i64(dcgmFieldECCDBE, 0),
			},
			want: Device{UUID: "GPU-1", Model: "NVIDIA H100", Index: 3, Minor: 5, Values: map[Field]float64{
				SMClockHertz: 1980e6, TemperatureCelsius: 41, PowerWatts: 312.5, EnergyJoules: 7_500_000,
				UtilizationRatio: 0.87, MemoryUtilRatio: 0.12, MemoryTotalBytes: 81559 << 20, MemoryUsedBytes: 1 << 30,
				ECCCorrected: 2, ECCUncorrected: 0,
			}},
		},
		{
			name: "profiling",
			in: []dcgmValue{
				f64(dcgmFieldSMActive, 0.9), f64(dcgmFieldSMOccupancy, 0.5), f64(dcgmFieldTensor, 0.4),
				f64(dcgmFieldDRAM, 0.3), f64(dcgmFieldFP64, 0.25), f64(dcgmFieldFP32, 0.2), f64(dcgmFieldFP16, 0.1),
				i64(dcgmFieldPCIeTX, 3_000_000_000), i64(dcgmFieldPCIeRX, 5), i64(dcgmFieldNVLinkTX, 7), f64(dcgmFieldNVLinkRX, 8),
			},
			want: Device{Minor: -1, Values: map[Field]float64{
				SMActiveRatio: 0.9, SMOccupancyRatio: 0.5, TensorActiveRatio: 0.4, DRAMActiveRatio: 0.3,
				FP64ActiveRatio: 0.25, FP32ActiveRatio: 0.2, FP16ActiveRatio: 0.1,
				PCIeTXBytesPerSecond: 3e9, PCIeRXBytesPerSecond: 5, NVLinkTXBytesPerSecond: 7, NVLinkRXBytesPerSecond: 8,
			}},
			prof: true,
		},
		{
			name: "MIG-enabled parent",
			in:   []dcgmValue{str(dcgmFieldUUID, "GPU-7"), i64(dcgmFieldMIGMode, 1)},
			want: Device{UUID: "GPU-7", Minor: -1, MIGEnabled: true, Values: map[Field]float64{}},
		},
		{
			name: "blank sentinels",
			in: []dcgmValue{
				str(dcgmFieldUUID, "GPU-2"),
				str(dcgmFieldName, "<<<NULL>>>"), i64(dcgmFieldMinor, dcgmInt32Blank),
				i64(dcgmFieldGPUTemp, dcgmInt32Blank+2), i64(dcgmFieldSMClock, dcgmInt64Blank+1),
				f64(dcgmFieldPower, dcgmFP64Blank), f64(dcgmFieldSMActive, dcgmFP64Blank+2),
				f64(dcgmFieldTensor, math.NaN()), i64(dcgmFieldECCSBE, dcgmInt64Blank+2),
				str(dcgmFieldUUID+1000, "ignored unknown field"),
			},
			want: Device{UUID: "GPU-2", Minor: -1, Values: map[Field]float64{}},
		},
		{
			// An energy counter in mJ passes the 32-bit sentinel range after
			// a few hours: only 64-bit sentinels blank it.
			name: "wide counters keep 32-bit sentinel values",
			in:   []dcgmValue{i64(dcgmFieldEnergy, dcgmInt32Blank), i64(dcgmFieldPCIeTX, dcgmInt32Blank+1)},
			want: Device{Minor: -1, Values: map[Field]float64{EnergyJoules: dcgmInt32Blank / 1000.0, PCIeTXBytesPerSecond: dcgmInt32Blank + 1}},
			prof: true,
		},
		{
			name: "statuses",
			in: []dcgmValue{
				status(f64(dcgmFieldPower, 1), dcgmStatusNotSupported),
				status(f64(dcgmFieldSMActive, 1), dcgmStatusProfNotSupp),
				status(i64(dcgmFieldGPUUtil, 1), dcgmStatusNoData),
				status(i64(dcgmFieldECCDBE, 1), dcgmStatusNotWatched),
				status(i64(dcgmFieldFBUsed, 1), -3),   // DCGM_ST_GENERIC_ERROR
				status(i64(dcgmFieldGPUTemp, 1), -18), // DCGM_ST_GPU_IS_LOST
				i64(dcgmFieldFBTotal, 10),
			},
			want:   Device{Minor: -1, Values: map[Field]float64{MemoryTotalBytes: 10 << 20}},
			failed: []uint16{dcgmFieldFBUsed, dcgmFieldGPUTemp},
		},
		{
			name: "wrong type for a numeric field",
			in:   []dcgmValue{str(dcgmFieldPower, "300"), {Field: dcgmFieldGPUTemp, Type: 'b'}},
			want: Device{Minor: -1, Values: map[Field]float64{}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Device{Minor: -1}
			failed, prof := applyDCGM(&d, tc.in)
			if !reflect.DeepEqual(d, tc.want) {
				t.Errorf("device\n got %+v\nwant %+v", d, tc.want)
			}
			if !reflect.DeepEqual(failed, tc.failed) || prof != tc.prof {
				t.Errorf("failed %v profiling %v; want %v %v", failed, prof, tc.failed, tc.prof)
			}
		})
	}
}

func TestDCGMXidEvents(t *testing.T) {
	uuids := map[uint]string{0: "GPU-0", 1: "GPU-1"}
	got := xidEvents([]dcgmXidSample{
		{0, i64(dcgmFieldXid, 79)},
		{1, i64(dcgmFieldXid, 48)},
		{1, i64(dcgmFieldXid, 0)},                            // no error
		{1, i64(dcgmFieldXid, dcgmInt64Blank)},               // blank
		{0, status(i64(dcgmFieldXid, 13), dcgmStatusNoData)}, // not a value
		{9, i64(dcgmFieldXid, 31)},                           // not a GPU we know
	}, uuids)
	want := []XidEvent{{UUID: "GPU-0", GPUInstanceID: -1, Xid: 79}, {UUID: "GPU-1", GPUInstanceID: -1, Xid: 48}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v want %+v", got, want)
	}
}

// Every profiling field counts as profiling, and only those.
func TestDCGMFieldLists(t *testing.T) {
	for _, f := range dcgmProfilingFields {
		d := Device{}
		if _, prof := applyDCGM(&d, []dcgmValue{f64(f, 0.5)}); !prof || len(d.Values) != 1 {
			t.Errorf("field %d: profiling %v values %v", f, prof, d.Values)
		}
	}
	for _, f := range dcgmTelemetryFields {
		d := Device{}
		if _, prof := applyDCGM(&d, []dcgmValue{i64(f, 1)}); prof || len(d.Values) != 1 {
			t.Errorf("field %d: profiling %v values %v", f, prof, d.Values)
		}
	}
}
