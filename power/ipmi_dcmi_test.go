// SPDX-License-Identifier: Apache-2.0

package power

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/jobscope/jobscope/internal/testutil"
)

// readHex reads a testdata/power/ipmi/*.hex capture.
func readHex(t testing.TB, name string) []byte {
	return testutil.HexFile(t, filepath.Join("..", "testdata", "power", "ipmi", name))
}

func TestGetPowerReadingRequest(t *testing.T) {
	netfn, cmd, data := GetPowerReadingRequest()
	if netfn != 0x2C || cmd != 0x02 || string(data) != "\xdc\x01\x00\x00" {
		t.Fatalf("request %#x %#x % x", netfn, cmd, data)
	}
}

func TestParseGetPowerReading(t *testing.T) {
	good := readHex(t, "inband-good.hex")
	padded := append(append([]byte{}, good...), 0, 0, 0)
	wrongGroup := append([]byte{}, good...)
	wrongGroup[1] = 0xDD
	big := append([]byte{}, good...)
	copy(big[2:], []byte{0xff, 0xff, 0x01, 0x00, 0x34, 0x12, 0x00, 0x80}) // 65535, 1, 4660, 32768 W
	for _, tc := range []struct {
		name string
		in   []byte
		want DCMIReading
		err  error
		code byte
	}{
		{name: "good", in: good, want: DCMIReading{Current: 220, Minimum: 68, Maximum: 480, Average: 218, PeriodSeconds: 1}},
		{name: "padded", in: padded, want: DCMIReading{Current: 220, Minimum: 68, Maximum: 480, Average: 218, PeriodSeconds: 1}},
		{name: "little endian", in: big, want: DCMIReading{Current: 65535, Minimum: 1, Maximum: 4660, Average: 32768, PeriodSeconds: 1}},
		{name: "not active", in: readHex(t, "inband-not-active.hex"), err: ErrNotActive},
		{name: "no DCMI", in: readHex(t, "inband-invalid-command.hex"), err: ErrUnsupported, code: 0xC1},
		{name: "mode unsupported", in: []byte{0xCC}, err: ErrUnsupported, code: 0xCC},
		{name: "driver timeout", in: []byte{0xC3}, code: 0xC3},
		{name: "insufficient privilege", in: []byte{0xD4}, code: 0xD4},
		{name: "empty", in: nil, err: ErrNoReading},
		{name: "short", in: good[:18], err: ErrNoReading},
		{name: "wrong group", in: wrongGroup, err: ErrNoReading},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := ParseGetPowerReading(tc.in)
			if tc.code != 0 {
				var ce *CompletionError
				if !errors.As(err, &ce) || ce.Code != tc.code {
					t.Fatalf("want completion code %#x, got %v", tc.code, err)
				}
				if tc.err == nil && errors.Is(err, ErrUnsupported) {
					t.Fatalf("%v must not count as unsupported (it may pass)", err)
				}
			}
			if tc.err != nil && !errors.Is(err, tc.err) {
				t.Fatalf("want %v, got %v", tc.err, err)
			}
			if tc.err == nil && tc.code == 0 && (err != nil || d != tc.want) {
				t.Fatalf("got %+v, %v; want %+v", d, err, tc.want)
			}
		})
	}
}

func FuzzParseGetPowerReading(f *testing.F) {
	for _, n := range []string{"inband-good.hex", "inband-not-active.hex", "inband-invalid-command.hex"} {
		f.Add(readHex(f, n))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := ParseGetPowerReading(b)
		if err != nil {
			return
		}
		if len(b) < powerReadingLen || b[0] != 0 || b[1] != DCMIGroupExtension {
			t.Fatalf("accepted % x", b)
		}
		for _, w := range []float64{d.Current, d.Minimum, d.Maximum, d.Average} {
			if w < 0 || w > 65535 {
				t.Fatalf("watts %v out of uint16 range", w)
			}
		}
	})
}
