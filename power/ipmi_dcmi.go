// SPDX-License-Identifier: Apache-2.0

package power

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// DCMI Get Power Reading on the wire (DCMI 1.5, section 6.6.1). The
// in-band path sends exactly this one request, so it is spelled out here
// instead of pulling in a general IPMI library.
const (
	NetFnDCMI            = 0x2C // group extension request; the answer comes as 0x2D
	CmdGetPowerReading   = 0x02
	DCMIGroupExtension   = 0xDC
	ModeSystemPowerStats = 0x01

	// powerReadingLen is the response with its completion code: cc, group,
	// current, min, max, avg (uint16 LE each), timestamp (uint32 LE,
	// seconds), reporting period (uint32 LE, ms), reading state.
	powerReadingLen = 19
	// stateActive is bit 6 of the state byte: measurement is on.
	stateActive = 0x40
)

// GetPowerReadingRequest is the request body: group extension, mode
// "system power statistics", two zero mode-attribute bytes.
func GetPowerReadingRequest() (netfn, cmd byte, data []byte) {
	return NetFnDCMI, CmdGetPowerReading, []byte{DCMIGroupExtension, ModeSystemPowerStats, 0, 0}
}

// CompletionError is a non-zero IPMI completion code from the BMC (or from
// the kernel driver, which answers 0xC3 itself when the BMC stays silent).
type CompletionError struct{ Code byte }

func (e *CompletionError) Error() string {
	name, ok := completionNames[e.Code]
	if !ok {
		name = "unknown"
	}
	return fmt.Sprintf("BMC completion code 0x%02X (%s)", e.Code, name)
}

// Unsupported says the BMC will never answer this request (no DCMI, or no
// system power statistics): retrying is pointless, a fallback is not.
func (e *CompletionError) Unsupported() bool { return e.Code == 0xC1 || e.Code == 0xCC }

// ErrUnsupported matches a CompletionError that is Unsupported.
var ErrUnsupported = errors.New("DCMI Get Power Reading not supported by this BMC")

func (e *CompletionError) Is(target error) bool { return target == ErrUnsupported && e.Unsupported() }

var completionNames = map[byte]string{
	0xC0: "node busy",
	0xC1: "invalid command: no DCMI power management",
	0xC2: "command invalid for given LUN",
	0xC3: "timeout while processing command",
	0xC4: "out of space",
	0xC7: "request data length invalid",
	0xC9: "parameter out of range",
	0xCC: "invalid data field in request: mode not supported",
	0xD4: "insufficient privilege level",
	0xD5: "command not supported in present state",
	0xFF: "unspecified error",
}

// ParseGetPowerReading decodes a Get Power Reading response that starts
// with its completion code. Bytes past the state byte are ignored (some
// BMCs pad); a short answer or a wrong group extension is an error, as is
// a BMC saying measurement is not active (its figures are then stale).
func ParseGetPowerReading(resp []byte) (DCMIReading, error) {
	var d DCMIReading
	if len(resp) == 0 {
		return d, fmt.Errorf("empty response: %w", ErrNoReading)
	}
	if resp[0] != 0 {
		return d, &CompletionError{Code: resp[0]}
	}
	if len(resp) < powerReadingLen {
		return d, fmt.Errorf("response of %d bytes, want %d: %w", len(resp), powerReadingLen, ErrNoReading)
	}
	if resp[1] != DCMIGroupExtension {
		return d, fmt.Errorf("group extension 0x%02X, want 0x%02X: %w", resp[1], DCMIGroupExtension, ErrNoReading)
	}
	le := binary.LittleEndian
	d.Current = float64(le.Uint16(resp[2:]))
	d.Minimum = float64(le.Uint16(resp[4:]))
	d.Maximum = float64(le.Uint16(resp[6:]))
	d.Average = float64(le.Uint16(resp[8:]))
	// resp[10:14] is the BMC's timestamp: often unset or in the BMC's own
	// clock, so the age metric uses the time jobscope got the answer.
	d.PeriodSeconds = float64(le.Uint32(resp[14:])) / 1000
	if resp[18]&stateActive == 0 {
		return d, ErrNotActive
	}
	return d, nil
}
