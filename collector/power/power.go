package power

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"

	"github.com/jobscope/jobscope/cgroupfs"
	"github.com/jobscope/jobscope/collector"
	"github.com/jobscope/jobscope/collector/discovery"
	"github.com/jobscope/jobscope/gpu"
	"github.com/jobscope/jobscope/power"
)

// Factory describes the power collector: RAPL and IPMI node power,
// per-job energy and emissions (method in docs/energy.md).
func Factory() collector.Factory {
	return collector.Factory{
		Name:      "power",
		Help:      "Node power from RAPL and IPMI DCMI, per-job energy split by CPU time and memory, GPU energy per job, grid emission factors",
		DefaultIn: []collector.Mode{collector.ModeNode},
		NeedsJobs: true,
		Descs:     func() []*collector.Desc { return collector.DescsOf(newPowerDescs()) },
		Flags: func(fs *pflag.FlagSet) func(env *collector.Env) (collector.Collector, error) {
			o := &PowerOptions{}
			fs.BoolVar(&o.RAPL, "power.rapl", true, "Read RAPL energy counters from powercap sysfs.")
			fs.DurationVar(&o.RAPLInterval, "power.rapl-interval", time.Minute, "Also read RAPL counters in the background this often, so a long scrape gap cannot hide a second wrap of energy_uj (0: only at scrapes).")
			fs.StringVar(&o.IPMIMode, "power.ipmi", IPMIAuto, "How to read the BMC's DCMI power: auto (in-band through the IPMI device when it opens, else --power.ipmi-command if set), inband, command or off.")
			fs.StringVar(&o.IPMIDevice, "power.ipmi-device", "", "IPMI device for in-band reads (default: the first of "+strings.Join(power.DefaultIPMIDevices, ", ")+" that opens).")
			fs.StringVar(&o.IPMICommand, "power.ipmi-command", "", "Command printing the output of freeipmi's ipmi-dcmi --get-system-power-statistics, split on spaces and run without a shell (e.g. \"/usr/sbin/ipmi-dcmi --get-system-power-statistics\"); the fallback of --power.ipmi=auto when no IPMI device opens.")
			fs.DurationVar(&o.IPMIInterval, "power.ipmi-interval", 30*time.Second, "Ask the BMC at most once per interval (BMCs are slow); scrapes in between get the cached reading.")
			fs.DurationVar(&o.IPMITimeout, "power.ipmi-timeout", 10*time.Second, "Give up on one BMC reading after this long (the command is killed with its whole process group).")
			fs.BoolVar(&o.PerJob, "power.per-job", true, "Export per-job energy counters (slurm_job_energy_joules_total).")
			fs.StringVar(&o.IdlePolicy, "power.idle-policy", string(power.PolicyCapacity), "Who pays for idle power: capacity (a job pays its share of the node's CPUs/memory; idle stays unattributed) or jobs (all measured energy is split among running jobs).")
			fs.Float64Var(&o.Factor, "power.emissions.factor", 0, "Static grid emission factor in gCO2e/kWh (0: none).")
			fs.StringVar(&o.Country, "power.emissions.country", "", "ISO 3166 country code for the embedded yearly factor (Our World in Data, 2023); empty: none.")
			fs.StringVar(&o.Provider, "power.emissions.provider", "", "Live factor provider: electricitymaps (token in $"+power.ElectricityMapsTokenEnv+") or rte (France, eCO2mix); empty: none.")
			fs.StringVar(&o.Zone, "power.emissions.zone", "", "Electricity Maps zone (default: --power.emissions.country).")
			fs.StringVar(&o.ProviderURL, "power.emissions.url", "", "Base URL of the live provider (default: its public API; set it for a proxy).")
			fs.DurationVar(&o.Refresh, "power.emissions.refresh", 15*time.Minute, "Ask the live provider at most once per interval.")
			fs.DurationVar(&o.Timeout, "power.emissions.timeout", 10*time.Second, "Timeout of one live provider request.")
			return func(env *collector.Env) (collector.Collector, error) { return NewPowerCollector(env, *o) }
		},
	}
}

// PowerOptions configure the power collector.
type PowerOptions struct {
	RAPL         bool
	RAPLInterval time.Duration
	// IPMIMode is auto, inband, command or off; "" (options built in
	// code) means command when IPMICommand is set, else off.
	IPMIMode     string
	IPMIDevice   string // "" probes power.DefaultIPMIDevices
	IPMICommand  string
	IPMIInterval time.Duration
	IPMITimeout  time.Duration
	PerJob       bool
	IdlePolicy   string
	Factor       float64
	Country      string
	Provider     string
	Zone         string
	ProviderURL  string
	Refresh      time.Duration
	Timeout      time.Duration

	// Now is the clock (tests set it); HTTPClient the live providers' client.
	Now        func() time.Time
	HTTPClient *http.Client
	// IPMIOpen opens the IPMI device (tests plug a fake BMC).
	IPMIOpen func(path string) (power.IPMIDevice, error)
}

type powerCollector struct {
	env       *collector.Env
	opts      PowerOptions
	stop      chan struct{} // ends keepRAPL
	closeOnce sync.Once
	d         powerDescs
	pairs     *collector.PairCache
	rapl      *power.RAPL
	zones     []power.Zone
	ipmi      *power.Poller[power.DCMIReading]
	live      *power.Poller[power.Factor]
	owid      *power.CountryFactor
	ledger    *power.Ledger
	cpus      float64
	memory    float64

	mu sync.Mutex // orders node readings with ledger steps
}

// NewPowerCollector builds the collector. RAPL zones are listed once here
// (they do not come and go); their absence is not an error, as long as
// some meter or factor remains.
func NewPowerCollector(env *collector.Env, o PowerOptions) (collector.Collector, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{}
	}
	policy, err := power.ParsePolicy(o.IdlePolicy)
	if err != nil {
		return nil, err
	}
	sysfs, procfs := "/sys", "/proc"
	if env != nil && env.SysFS != "" {
		sysfs = env.SysFS
	}
	if env != nil && env.ProcFS != "" {
		procfs = env.ProcFS
	}
	c := &powerCollector{env: env, opts: o, d: newPowerDescs(), pairs: collector.NewPairCache(), ledger: power.NewLedger(policy)}
	if o.RAPL {
		c.rapl = power.NewRAPL(sysfs)
		c.zones, _ = c.rapl.Zones() // none: no RAPL series, checked per scrape
		if len(c.zones) > 0 && o.RAPLInterval > 0 {
			c.stop = make(chan struct{})
			go c.keepRAPL(o.RAPLInterval, c.stop)
		}
	}
	fetch, err := ipmiSource(o, envLogger(env))
	if err != nil {
		return nil, err
	}
	if fetch != nil {
		c.ipmi = power.NewPoller(fetch, o.IPMIInterval, o.IPMITimeout+time.Second, o.Now)
	}
	if o.Country != "" {
		f, err := power.LookupCountry(o.Country)
		if err != nil {
			return nil, err
		}
		c.owid = &f
	}
	if o.Factor < 0 {
		return nil, fmt.Errorf("--power.emissions.factor must not be negative")
	}
	switch o.Provider {
	case "":
	case "electricitymaps":
		token := os.Getenv(power.ElectricityMapsTokenEnv)
		if token == "" {
			return nil, fmt.Errorf("--power.emissions.provider=electricitymaps needs a token in $%s", power.ElectricityMapsTokenEnv)
		}
		zone := o.Zone
		if zone == "" {
			zone = o.Country
		}
		if zone == "" {
			return nil, errors.New("--power.emissions.provider=electricitymaps needs --power.emissions.zone or --power.emissions.country")
		}
		c.live = power.NewPoller(power.ElectricityMaps(o.HTTPClient, orDefault(o.ProviderURL, power.ElectricityMapsURL), zone, token), o.Refresh, o.Timeout, o.Now)
	case "rte":
		c.live = power.NewPoller(power.RTE(o.HTTPClient, orDefault(o.ProviderURL, power.RTEURL)), o.Refresh, o.Timeout, o.Now)
	default:
		return nil, fmt.Errorf("unknown --power.emissions.provider %q (want electricitymaps or rte)", o.Provider)
	}
	c.cpus = onlineCPUs(sysfs)
	c.memory = memTotal(procfs)
	return c, nil
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// onlineCPUs counts <sysfs>/devices/system/cpu/online (read once: CPU
// hotplug on compute nodes is rare), else the CPUs Go sees.
func onlineCPUs(sysfs string) float64 {
	b, err := os.ReadFile(filepath.Join(sysfs, "devices", "system", "cpu", "online"))
	if err == nil {
		if l, err := cgroupfs.ParseCPUList(b); err == nil && len(l) > 0 {
			return float64(len(l))
		}
	}
	return float64(runtime.NumCPU())
}

// memTotal reads MemTotal from <procfs>/meminfo in bytes (0 if unknown:
// then the capacity policy splits DRAM energy like the jobs policy).
func memTotal(procfs string) float64 {
	b, err := os.ReadFile(filepath.Join(procfs, "meminfo"))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			f := strings.Fields(rest)
			if len(f) == 2 && f[1] == "kB" {
				if v, err := strconv.ParseUint(f[0], 10, 64); err == nil {
					return float64(v) * 1024
				}
			}
		}
	}
	return 0
}

// nodeReading is what the node meters said in one scrape.
type nodeReading struct {
	sample      power.Sample // node part (jobs filled later)
	hasCPUZones bool
	hasDRAM     bool
	read        int   // zones read
	err         error // why zones were not read
}

func (c *powerCollector) Collect(s *collector.Scrape, ch chan<- prometheus.Metric) error {
	// Slow sources first, outside the lock: they wait at most for the
	// scrape deadline and never run more than once per interval.
	var dcmi power.DCMIReading
	var dcmiOK bool
	if c.ipmi != nil {
		wctx, cancel := shareOfDeadline(s.Context())
		d, at, ok, err := c.ipmi.Get(wctx)
		cancel()
		if err != nil {
			s.Problem(ipmiCause(err), err)
		}
		if ok && c.opts.Now().Sub(at) <= 2*c.opts.IPMIInterval+c.opts.IPMITimeout {
			dcmi, dcmiOK = d, true
			c.emitDCMI(ch, d, c.opts.Now().Sub(at))
		}
	}
	factor, hasFactor := c.emissions(s, ch)
	var jobs []*discovery.Job
	if c.opts.PerJob {
		jobs = s.Jobs() // discovery may take a while: not under the lock
	}
	gpus := gpuEnergy(s) // likewise the scrape's GPU reading

	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.readRAPL(s, ch)
	smp := r.sample
	smp.At = c.opts.Now()
	smp.CPUs, smp.Memory = c.cpus, c.memory
	smp.NodeWatts, smp.HasNode = dcmi.Current, dcmiOK
	smp.Factor, smp.HasFactor = factor, hasFactor
	smp.GPUs, smp.HasGPU = gpus, len(gpus) > 0
	if len(c.zones) == 0 && c.ipmi == nil && !smp.HasGPU {
		return fmt.Errorf("no RAPL zone under %s and no IPMI source: %w", filepath.Join(c.sysfs(), "class", "powercap"), collector.ErrNoData)
	}
	if c.opts.PerJob {
		// Even without a reading now, jobs keep their counters in the output.
		c.perJob(s, ch, jobs, smp, r, smp.HasGPU)
	}
	if r.read == 0 && !dcmiOK && !smp.HasGPU {
		if r.err != nil && c.ipmi == nil {
			return fmt.Errorf("%w: %v", collector.ErrNoData, r.err) // no privileges: logged once
		}
		return errors.New("no power meter gave a reading in this scrape")
	}
	return nil
}

func (c *powerCollector) sysfs() string {
	if c.env != nil && c.env.SysFS != "" {
		return c.env.SysFS
	}
	return "/sys"
}

// readRAPL emits the zone counters and sums the package and dram zones
// for attribution. A sum is used only when every zone of its domain was
// read: a partial sum would later look like a jump.
func (c *powerCollector) readRAPL(s *collector.Scrape, ch chan<- prometheus.Metric) nodeReading {
	var r nodeReading
	if len(c.zones) == 0 {
		return r
	}
	readings, err := c.rapl.Read(c.zones)
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

func (c *powerCollector) emitDCMI(ch chan<- prometheus.Metric, d power.DCMIReading, age time.Duration) {
	for _, v := range []struct {
		stat string
		w    float64
	}{{"current", d.Current}, {"minimum", d.Minimum}, {"maximum", d.Maximum}, {"average", d.Average}} {
		ch <- c.d.ipmi.Gauge(v.w, v.stat)
	}
	ch <- c.d.ipmiAge.Gauge(age.Seconds())
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
		wctx, cancel := shareOfDeadline(s.Context())
		f, at, has, err := c.live.Get(wctx)
		cancel()
		if err != nil {
			s.Problem("emissions_provider", err)
		}
		if has && c.opts.Now().Sub(at) <= 3*c.opts.Refresh+c.opts.Timeout {
			ch <- c.d.factor.Gauge(f.GramsPerKWh, c.opts.Provider)
			use, ok = f.GramsPerKWh, true
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
func gpuEnergy(s *collector.Scrape) []power.GPUDevice {
	rd, err := s.GPU()
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

// shareOfDeadline bounds the wait for a slow source (BMC, web API) to half
// of what is left of the scrape, so the collector still has time to emit
// its other series; the source's answer then serves a later scrape.
func shareOfDeadline(ctx context.Context) (context.Context, context.CancelFunc) {
	dl, ok := ctx.Deadline()
	if !ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, time.Until(dl)/2)
}

// keepRAPL reads the RAPL counters between scrapes: energy_uj wraps every
// few minutes at full load (262 kJ at 400 W: 11 min), and two wraps between
// reads would go unseen. It runs until Close; errors are left to the
// scrapes to report.
func (c *powerCollector) keepRAPL(every time.Duration, stop <-chan struct{}) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			c.rapl.Read(c.zones)
		case <-stop:
			return
		}
	}
}

// Close stops the background RAPL reads.
func (c *powerCollector) Close() error {
	c.closeOnce.Do(func() {
		if c.stop != nil {
			close(c.stop)
		}
	})
	return nil
}
