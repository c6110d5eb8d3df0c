// SPDX-License-Identifier: Apache-2.0

package power

import (
	"bufio"
	"bytes"
	_ "embed"
	"fmt"
	"strconv"
	"strings"
)

//go:embed emissions_factors.csv
var factorsCSV []byte

// CountryFactor is one row of the embedded table.
type CountryFactor struct {
	ISO2, ISO3, Country string
	Year                int
	GramsPerKWh         float64
}

// ParseFactors reads the table format of emissions_factors.csv: '#'
// comments, a header line, then iso2,iso3,country,year,grams_per_kwh.
func ParseFactors(b []byte) ([]CountryFactor, error) {
	var out []CountryFactor
	sc := bufio.NewScanner(bytes.NewReader(b))
	header := true
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if header {
			header = false
			continue
		}
		f := strings.Split(line, ",")
		if len(f) != 5 {
			return nil, fmt.Errorf("line %d: want 5 fields, got %d", n, len(f))
		}
		year, err := strconv.Atoi(f[3])
		if err != nil {
			return nil, fmt.Errorf("line %d: year: %w", n, err)
		}
		g, err := strconv.ParseFloat(f[4], 64)
		if err != nil || g < 0 {
			return nil, fmt.Errorf("line %d: bad factor %q", n, f[4])
		}
		out = append(out, CountryFactor{ISO2: f[0], ISO3: f[1], Country: f[2], Year: year, GramsPerKWh: g})
	}
	return out, sc.Err()
}

// LookupCountry finds a country of the embedded table by ISO 3166 alpha-2 or
// alpha-3 code, newest year first.
func LookupCountry(code string) (CountryFactor, error) {
	rows, err := ParseFactors(factorsCSV)
	if err != nil {
		return CountryFactor{}, err
	}
	var best CountryFactor
	found := false
	for _, r := range rows {
		if (strings.EqualFold(code, r.ISO2) || strings.EqualFold(code, r.ISO3)) && (!found || r.Year > best.Year) {
			best, found = r, true
		}
	}
	if !found {
		return best, fmt.Errorf("country %q not in the embedded emission factors (set --collector.power.emissions.factor instead)", code)
	}
	return best, nil
}
