// SPDX-License-Identifier: Apache-2.0

package power

import (
	"context"
	"errors"
	"io/fs"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jobscope/jobscope/collector"
	"github.com/jobscope/jobscope/gpu"
	"github.com/jobscope/jobscope/internal/poll"
	"github.com/jobscope/jobscope/power"
)

// raplRead is one read of every RAPL zone: what could be read, and why the
// rest could not.
type raplRead struct {
	readings []power.ZoneReading
	err      error
}

// newRAPLPoller lists the zones (once: they do not come and go; none means
// no RAPL series) and reads them at every scrape, one read for overlapping
// scrapes, and in the background every --collector.power.rapl-interval: energy_uj
// wraps every few minutes at full load (262 kJ at 400 W: 11 min), and two
// wraps between reads would go unseen.
func newRAPLPoller(sysfs string, o Options) (*poll.Poller[raplRead], []power.Zone) {
	r := power.NewRAPL(sysfs)
	zones, _ := r.Zones()
	if len(zones) == 0 {
		return nil, nil
	}
	return poll.New(func(context.Context) (raplRead, error) {
		readings, err := r.Read(zones)
		return raplRead{readings, err}, nil
	}, poll.Config{Every: o.RAPLInterval, Now: o.Now}), zones
}

// readRAPL emits the zone counters and sums the package and dram zones
// for attribution. A sum is used only when every zone of its domain was
// read: a partial sum would later look like a jump.
func (c *powerCollector) readRAPL(s *collector.Scrape, ch chan<- prometheus.Metric) nodeReading {
	var r nodeReading
	if c.rapl == nil {
		return r
	}
	rd := c.rapl.Get(s.Context()).Value
	readings, err := rd.readings, rd.err
	r.read, r.err = len(readings), err
	if err != nil {
		if errors.Is(err, power.ErrPermission) {
			s.Problem("rapl_permission", err)
		} else if !errors.Is(err, fs.ErrNotExist) {
			s.Problem("rapl_read", err)
		}
	}
	want := map[power.Domain]int{}
	for _, z := range c.zones {
		want[z.Domain]++
	}
	got := map[power.Domain]int{}
	var pkg, dram float64
	psys := false
	for _, z := range readings {
		got[z.Domain]++
		switch z.Domain {
		case power.DomainPackage:
			pkg += z.Joules
		case power.DomainDRAM:
			dram += z.Joules
		case power.DomainPsys:
			if psys { // a second platform zone would duplicate the series
				continue
			}
			psys = true
			ch <- c.d.psys.Counter(z.Joules)
			continue
		}
		ch <- c.d.rapl[z.Domain].Counter(z.Joules, z.Socket)
	}
	r.hasCPUZones = want[power.DomainPackage] > 0
	r.hasDRAM = want[power.DomainDRAM] > 0
	r.sample.CPUJoules, r.sample.HasCPU = pkg, r.hasCPUZones && got[power.DomainPackage] == want[power.DomainPackage]
	r.sample.DRAMJoules, r.sample.HasDRAM = dram, r.hasDRAM && got[power.DomainDRAM] == want[power.DomainDRAM]
	return r
}

// readIPMI emits the BMC's last reading while it is recent enough to use:
// two intervals and a timeout (one missed poll is no gap).
func (c *powerCollector) readIPMI(s *collector.Scrape, ch chan<- prometheus.Metric) (power.DCMIReading, bool) {
	if c.ipmi == nil {
		return power.DCMIReading{}, false
	}
	r := c.ipmi.Get(s.Context())
	if r.Unreported != nil {
		s.Problem(ipmiCause(r.Unreported), r.Unreported)
	}
	if !r.Has() || r.Age() > 2*c.opts.IPMIInterval+c.opts.IPMITimeout {
		return power.DCMIReading{}, false
	}
	d := r.Value
	for _, v := range []struct {
		stat string
		w    float64
	}{{"current", d.Current}, {"minimum", d.Minimum}, {"maximum", d.Maximum}, {"average", d.Average}} {
		ch <- c.d.ipmi.Gauge(v.w, v.stat)
	}
	ch <- c.d.ipmiAge.Gauge(r.Age().Seconds())
	return d, true
}

func (c *powerCollector) livePoller(fetch func(context.Context) (power.Factor, error)) *poll.Poller[power.Factor] {
	return poll.New(fetch, poll.Config{Interval: c.opts.Refresh, Timeout: c.opts.Timeout, Wait: slowShare, Now: c.opts.Now})
}

// emissions emits every configured factor and returns the one used for
// per-job grams: live when fresh, else static, else the country's year.
func (c *powerCollector) emissions(s *collector.Scrape, ch chan<- prometheus.Metric) (float64, bool) {
	var use float64
	var ok bool
	if c.owid != nil {
		ch <- c.d.factor.Gauge(c.owid.GramsPerKWh, "owid")
		use, ok = c.owid.GramsPerKWh, true
	}
	if c.opts.Factor > 0 {
		ch <- c.d.factor.Gauge(c.opts.Factor, "static")
		use, ok = c.opts.Factor, true
	}
	if c.live != nil {
		r := c.live.Get(s.Context())
		if r.Unreported != nil {
			s.Problem("emissions_provider", r.Unreported)
		}
		if r.Has() && r.Age() <= 3*c.opts.Refresh+c.opts.Timeout {
			ch <- c.d.factor.Gauge(r.Value.GramsPerKWh, c.opts.Provider)
			use, ok = r.Value.GramsPerKWh, true
		}
	}
	return use, ok
}

// gpuEnergy is each physical GPU's energy counter and holding job in
// this scrape's GPU reading, the one the gpu collector exports (no second
// backend read: it would double the NVML calls, shorten the GPM sampling
// interval and take Xid events away from the gpu collector). A MIG-enabled
// GPU's energy is the node's: several jobs may share it. Without a
// reading (no GPU source, or it failed: the gpu collector reports that),
// the GPU part is skipped.
func (c *powerCollector) gpuEnergy(s *collector.Scrape) []power.GPUDevice {
	if c.opts.GPU == nil {
		return nil
	}
	rd, err := c.opts.GPU.Read(s)
	if err != nil || rd == nil {
		return nil
	}
	out := make([]power.GPUDevice, 0, len(rd.Devices))
	for i := range rd.Devices {
		d := &rd.Devices[i]
		j, ok := d.Values[gpu.EnergyJoules]
		if !ok || d.IsMIG() {
			continue
		}
		g := power.GPUDevice{ID: d.UUID, Joules: j}
		if !d.MIGEnabled {
			g.JobID = rd.Holder(d.UUID)
		}
		out = append(out, g)
	}
	return out
}

// Close stops the background RAPL reads and cancels a BMC or web request
// in flight.
func (c *powerCollector) Close() error {
	if c.rapl != nil {
		c.rapl.Close()
	}
	if c.ipmi != nil {
		c.ipmi.Close()
	}
	if c.live != nil {
		c.live.Close()
	}
	return nil
}
