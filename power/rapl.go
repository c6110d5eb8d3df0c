// SPDX-License-Identifier: Apache-2.0

package power

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Domain is a RAPL power domain.
type Domain string

const (
	DomainPackage Domain = "package"
	DomainCore    Domain = "core"
	DomainUncore  Domain = "uncore"
	DomainDRAM    Domain = "dram"
	DomainPsys    Domain = "psys"
)

// Zone is one powercap RAPL zone.
type Zone struct {
	ID     string // powercap name, e.g. intel-rapl:0:2
	Domain Domain
	// Socket is what follows "package-" in the package zone's name ("0", or
	// "0-die-1" on multi-die parts); subzones inherit it; empty for psys.
	Socket string
	Dir    string
	// MaxRange is max_energy_range_uj: energy_uj wraps to 0 past it. 0 when
	// unknown (then a decrease cannot be told from a reset).
	MaxRange uint64
}

// ZoneReading is a zone's energy since the reader started counting,
// made monotonic across wraps of energy_uj.
type ZoneReading struct {
	Zone
	Joules float64
}

// ErrPermission says energy_uj could not be read for lack of privileges.
var ErrPermission = errors.New("RAPL energy_uj is readable by root only (Linux >= 5.10, CVE-2020-8694 mitigation): run jobscope as root or with CAP_DAC_READ_SEARCH, or relax the mode of /sys/class/powercap/*/energy_uj with a udev rule")

// RAPL reads powercap zones under a sysfs root and keeps one monotonic
// counter per zone. Safe for concurrent use: the node collector and the
// per-job ledger may read it in the same scrape.
type RAPL struct {
	root     string
	readFile func(string) ([]byte, error)

	mu    sync.Mutex
	state map[string]*zoneState
}

type zoneState struct {
	last  uint64
	total float64 // joules
}

// NewRAPL returns a reader of <sysfs>/class/powercap.
func NewRAPL(sysfs string) *RAPL {
	return &RAPL{root: filepath.Join(sysfs, "class", "powercap"), readFile: os.ReadFile, state: map[string]*zoneState{}}
}

// Zones lists the RAPL zones, package zones first then by id. MMIO
// duplicates (intel-rapl-mmio) are skipped: they report the same package
// energy a second time. A missing powercap directory gives fs.ErrNotExist.
func (r *RAPL) Zones() ([]Zone, error) {
	entries, err := os.ReadDir(r.root)
	if err != nil {
		return nil, err
	}
	names := map[string]string{}
	var ids []string
	for _, e := range entries {
		id := e.Name()
		if !strings.HasPrefix(id, "intel-rapl:") {
			continue
		}
		b, err := r.readFile(filepath.Join(r.root, id, "name"))
		if err != nil {
			continue
		}
		names[id] = strings.TrimSpace(string(b))
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var zones []Zone
	for _, id := range ids {
		z, ok := zoneOf(id, names)
		if !ok {
			continue
		}
		z.Dir = filepath.Join(r.root, id)
		if b, err := r.readFile(filepath.Join(z.Dir, "max_energy_range_uj")); err == nil {
			z.MaxRange, _ = strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		}
		zones = append(zones, z)
	}
	if len(zones) == 0 {
		return nil, fmt.Errorf("no RAPL zone under %s: %w", r.root, fs.ErrNotExist)
	}
	return zones, nil
}

// zoneOf names a zone from its own name and, for subzones, its parent's.
func zoneOf(id string, names map[string]string) (Zone, bool) {
	name := names[id]
	z := Zone{ID: id}
	parts := strings.Split(strings.TrimPrefix(id, "intel-rapl:"), ":")
	switch {
	case strings.HasPrefix(name, "package-"):
		z.Domain, z.Socket = DomainPackage, strings.TrimPrefix(name, "package-")
	case name == "psys":
		z.Domain = DomainPsys
	case name == "core" || name == "uncore" || name == "dram":
		z.Domain = Domain(name)
		if len(parts) == 2 {
			parent := names["intel-rapl:"+parts[0]]
			if !strings.HasPrefix(parent, "package-") {
				return z, false
			}
			z.Socket = strings.TrimPrefix(parent, "package-")
		} else {
			// A top-level dram zone (some servers) belongs to the socket of
			// the same index.
			z.Socket = parts[0]
		}
	default:
		return z, false
	}
	return z, true
}

// Read reads every zone and returns its monotonic energy. A counter starts
// at the first value read (energy since an unknown point, like energy_uj);
// later reads add the increase, counting one wrap through MaxRange when the
// raw value went down. More than one wrap between two reads cannot be seen:
// keep reads closer than the wrap time (minutes at full load, see
// docs/energy.md). Zones that fail to read are left out; an ErrPermission
// is returned when that was the reason for all of them.
func (r *RAPL) Read(zones []Zone) ([]ZoneReading, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]ZoneReading, 0, len(zones))
	var firstErr error
	for _, z := range zones {
		b, err := r.readFile(filepath.Join(z.Dir, "energy_uj"))
		if err != nil {
			if errors.Is(err, fs.ErrPermission) {
				err = fmt.Errorf("%w (%v)", ErrPermission, err)
			}
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		raw, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("%s/energy_uj: %w", z.Dir, err)
			}
			continue
		}
		st := r.state[z.Dir]
		if st == nil {
			st = &zoneState{last: raw, total: float64(raw) / 1e6}
			r.state[z.Dir] = st
		} else {
			st.total += float64(Increase(st.last, raw, z.MaxRange)) / 1e6
			st.last = raw
		}
		out = append(out, ZoneReading{Zone: z, Joules: st.total})
	}
	if len(out) == 0 && firstErr != nil {
		return nil, firstErr
	}
	return out, firstErr
}

// Increase is the growth of a counter that wraps to 0 past top: one wrap is
// assumed when it went down. With top unknown (0) or a value beyond top
// (the counter was reset, not wrapped) a decrease counts as a restart from 0.
func Increase(prev, cur, top uint64) uint64 {
	if cur >= prev {
		return cur - prev
	}
	if top == 0 || prev > top {
		return cur
	}
	return top - prev + cur
}
