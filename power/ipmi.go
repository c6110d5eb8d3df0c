// SPDX-License-Identifier: Apache-2.0

package power

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// DCMIReading is one answer of the BMC to Get Power Reading, in watts.
type DCMIReading struct {
	Current, Minimum, Maximum, Average float64
	// PeriodSeconds is the BMC's statistics reporting time period (the
	// window of Minimum/Maximum/Average); 0 when not given.
	PeriodSeconds float64
}

// ErrNotActive says the BMC reports that power measurement is off: its
// numbers are then meaningless.
var ErrNotActive = errors.New("BMC reports power measurement not active")

// ErrNoReading says the output held no power figures.
var ErrNoReading = errors.New("no DCMI power reading in output")

// ParseDCMI parses the output of freeipmi's
// `ipmi-dcmi --get-system-power-statistics` ("Key : value unit" lines).
// Unknown lines are ignored; Current Power is required.
func ParseDCMI(r io.Reader) (DCMIReading, error) {
	var d DCMIReading
	var haveCurrent bool
	active := true
	sc := bufio.NewScanner(io.LimitReader(r, 64<<10))
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		key = strings.ToLower(strings.TrimSpace(key))
		val = strings.TrimSpace(val)
		switch key {
		case "current power":
			v, err := watts(val)
			if err != nil {
				return d, fmt.Errorf("current power: %w", err)
			}
			d.Current, haveCurrent = v, true
		case "minimum power over sampling duration":
			d.Minimum, _ = watts(val)
		case "maximum power over sampling duration":
			d.Maximum, _ = watts(val)
		case "average power over sampling duration":
			d.Average, _ = watts(val)
		case "statistics reporting time period":
			f := strings.Fields(val)
			if len(f) == 2 && strings.EqualFold(f[1], "milliseconds") {
				if ms, err := strconv.ParseUint(f[0], 10, 64); err == nil {
					d.PeriodSeconds = float64(ms) / 1000
				}
			}
		case "power measurement":
			active = strings.EqualFold(val, "active")
		}
	}
	if err := sc.Err(); err != nil {
		return d, err
	}
	if !haveCurrent {
		return d, ErrNoReading
	}
	if !active {
		return d, ErrNotActive
	}
	return d, nil
}

// watts parses "220 Watts" (freeipmi writes Watts and watts).
func watts(s string) (float64, error) {
	f := strings.Fields(s)
	if len(f) != 2 || !strings.HasPrefix(strings.ToLower(f[1]), "watt") {
		return 0, fmt.Errorf("%q: %w", s, ErrNoReading)
	}
	v, err := strconv.ParseUint(f[0], 10, 32)
	if err != nil {
		return 0, fmt.Errorf("%q: %w", s, ErrNoReading)
	}
	return float64(v), nil
}
