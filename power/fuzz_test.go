// SPDX-License-Identifier: Apache-2.0

package power

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

// The embedded table's parser, seeded with the table itself.
func FuzzParseFactors(f *testing.F) {
	f.Add(factorsCSV)
	f.Add([]byte("h\nFR,FRA,France,2023,56\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		rows, err := ParseFactors(b)
		for _, r := range rows {
			if err == nil && !(r.GramsPerKWh >= 0) {
				t.Fatalf("accepted %+v", r)
			}
		}
	})
}

// answer serves one fixed body to every request.
type answer []byte

func (a answer) RoundTrip(*http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Body: io.NopCloser(bytes.NewReader(a)), Header: http.Header{"Content-Type": {"application/json"}}}, nil
}

// Both live providers' answers, seeded with the answers their APIs give.
func FuzzLiveAnswers(f *testing.F) {
	f.Add([]byte(`{"zone":"DE","carbonIntensity":302,"datetime":"2026-11-21T13:00:00.000Z","updatedAt":"2026-11-21T13:05:00.000Z","isEstimated":true}`))
	f.Add([]byte(`{"total_count": 35040, "results": [{"date_heure": "2026-11-21T12:45:00+00:00", "taux_co2": 23}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c := &http.Client{Transport: answer(b)}
		for _, get := range []func(context.Context) (Factor, error){
			ElectricityMaps(c, "http://provider", "DE", "token"), RTE(c, "http://provider"),
		} {
			if fa, err := get(t.Context()); err == nil && !(fa.GramsPerKWh >= 0) {
				t.Fatalf("accepted %+v from %q", fa, b)
			}
		}
	})
}

// energy_uj as RAPL reads it, seeded with a real zone's files: whatever the
// file holds, the counter never goes down.
func FuzzRAPLEnergy(f *testing.F) {
	zone := filepath.Join("..", "testdata", "power", "node", "scrape1", "sys", "class", "powercap", "intel-rapl:0")
	seed, err := os.ReadFile(filepath.Join(zone, "energy_uj"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed, []byte("0\n"))
	f.Add([]byte("18446744073709551615\n"), []byte("1\n"))
	f.Fuzz(func(t *testing.T, first, second []byte) {
		sys := t.TempDir()
		dir := filepath.Join(sys, "class", "powercap", "intel-rapl:0")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		write := func(name string, b []byte) {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		write("name", []byte("package-0\n"))
		write("max_energy_range_uj", []byte("262143328850\n"))
		r := NewRAPL(sys)
		zones, err := r.Zones()
		if err != nil || len(zones) != 1 {
			t.Fatalf("zones %v %v", zones, err)
		}
		var last float64
		for i, b := range [][]byte{first, second} {
			write("energy_uj", b)
			got, _ := r.Read(zones)
			if len(got) == 1 {
				if got[0].Joules < last || got[0].Joules != got[0].Joules {
					t.Fatalf("read %d: %v J after %v J", i, got[0].Joules, last)
				}
				last = got[0].Joules
			}
		}
	})
}
