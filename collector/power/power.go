// SPDX-License-Identifier: Apache-2.0

package power

import (
	"errors"
	"fmt"
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
	"github.com/jobscope/jobscope/collector/provide"
	"github.com/jobscope/jobscope/collector/provide/gpus"
	"github.com/jobscope/jobscope/collector/provide/jobcgroup"
	"github.com/jobscope/jobscope/discovery"
	"github.com/jobscope/jobscope/internal/flagval"
	"github.com/jobscope/jobscope/internal/poll"
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
		Needs:     []string{jobcgroup.Name},
		Descs:     func() []*collector.Desc { return collector.DescsOf(newPowerDescs()) },
		Flags:     registerFlags,
	}
}

// registerFlags adds the --collector.power.* flags and returns the
// constructor.
func registerFlags(fs *pflag.FlagSet) func(env *collector.Env) (collector.Collector, error) {
	o := &Options{}
	fs.BoolVar(&o.RAPL, "collector.power.rapl", true, "Read RAPL energy counters from powercap sysfs.")
	flagval.Duration(fs, &o.RAPLInterval, "collector.power.rapl-interval", time.Minute, 0, "Also read RAPL counters in the background this often, so a long scrape gap cannot hide a second wrap of energy_uj (0: only at scrapes).")
	flagval.Enum(fs, &o.IPMIMode, "collector.power.ipmi", IPMIAuto, []string{IPMIAuto, IPMIInBand, IPMICommand, IPMIOff}, "How to read the BMC's DCMI power: auto (in-band through the IPMI device when it opens, else --collector.power.ipmi-command if set), inband, command or off.")
	flagval.String(fs, &o.IPMIDevice, "collector.power.ipmi-device", "", "IPMI device for in-band reads (default: the first of "+strings.Join(power.DefaultIPMIDevices, ", ")+" that opens); a given one must exist.", flagval.Optional(flagval.Exists))
	flagval.String(fs, &o.IPMICommand, "collector.power.ipmi-command", "", "Command printing the output of freeipmi's ipmi-dcmi --get-system-power-statistics, split on spaces and run without a shell (e.g. \"/usr/sbin/ipmi-dcmi --get-system-power-statistics\"); the fallback of --collector.power.ipmi=auto when no IPMI device opens. Its program must exist.", flagval.Optional(flagval.Command))
	flagval.Duration(fs, &o.IPMIInterval, "collector.power.ipmi-interval", 30*time.Second, 1, "Ask the BMC at most once per interval (BMCs are slow); scrapes in between get the cached reading.")
	flagval.Duration(fs, &o.IPMITimeout, "collector.power.ipmi-timeout", 10*time.Second, 1, "Give up on one BMC reading after this long (the command is killed with its whole process group).")
	fs.BoolVar(&o.PerJob, "collector.power.per-job", true, "Export per-job energy counters (slurm_job_energy_joules_total).")
	flagval.Enum(fs, &o.IdlePolicy, "collector.power.idle-policy", string(power.PolicyCapacity), []string{string(power.PolicyCapacity), string(power.PolicyJobs)}, "Who pays for idle power: capacity (a job pays its share of the node's CPUs/memory; idle stays unattributed) or jobs (all measured energy is split among running jobs).")
	flagval.Float(fs, &o.Factor, "collector.power.emissions.factor", 0, 0, "Static grid emission factor in gCO2e/kWh (0: none).")
	flagval.String(fs, &o.Country, "collector.power.emissions.country", "", "ISO 3166 alpha-2 or alpha-3 country code for the embedded yearly factor (Our World in Data, latest year per country; docs/energy.md); empty: none.", checkCountry)
	flagval.Enum(fs, &o.Provider, "collector.power.emissions.provider", "", []string{"", "electricitymaps", "rte"}, "Live factor provider: electricitymaps (token in $"+power.ElectricityMapsTokenEnv+") or rte (France, eCO2mix); empty: none.")
	flagval.String(fs, &o.Zone, "collector.power.emissions.zone", "", "Electricity Maps zone, e.g. FR or US-CAL-CISO (default: --collector.power.emissions.country).", checkZone)
	flagval.String(fs, &o.ProviderURL, "collector.power.emissions.url", "", "Base URL of the live provider, http:// or https:// (default: its public API; set it for a proxy).", flagval.Optional(flagval.HTTPURL))
	flagval.Duration(fs, &o.Refresh, "collector.power.emissions.refresh", 15*time.Minute, 1, "Ask the live provider at most once per interval.")
	flagval.Duration(fs, &o.Timeout, "collector.power.emissions.timeout", 10*time.Second, 1, "Timeout of one live provider request.")
	// The names before the collector.<name> namespace (issue 26), kept
	// for one release; CHANGELOG.md lists them.
	for _, n := range []string{"rapl", "rapl-interval", "ipmi", "ipmi-device", "ipmi-command", "ipmi-interval", "ipmi-timeout",
		"per-job", "idle-policy", "emissions.factor", "emissions.country", "emissions.provider", "emissions.zone",
		"emissions.url", "emissions.refresh", "emissions.timeout"} {
		flagval.Alias(fs, "power."+n, "collector.power."+n)
	}
	return func(env *collector.Env) (collector.Collector, error) {
		o := *o
		usage, err := provide.Need[*jobcgroup.Provider](env.Providers, jobcgroup.Name)
		if err != nil {
			return nil, err
		}
		o.Usage = usage
		// The GPUs' energy when the gpu collector opened them: one reading
		// per scrape for both (power does not open a backend of its own).
		if g, ok := provide.Loaded[*gpus.Provider](env.Providers, gpus.Name); ok {
			o.GPU = g
		}
		c, err := New(env, o)
		if err != nil {
			// Every option was checked as it was parsed; what is left is
			// the environment (the Electricity Maps token), equally fixed
			// at start.
			return nil, collector.BadFlag(err)
		}
		return c, nil
	}
}

// checkCountry accepts the codes of the embedded table, so that a country
// without a factor stops the start instead of the whole power collector.
func checkCountry(code string) error {
	if code == "" {
		return nil
	}
	_, err := power.LookupCountry(code)
	return err
}

// checkZone accepts an Electricity Maps zone name: letters, digits and
// '-', as its zone list writes them. The zone goes into the provider's URL,
// where any other character would change the request.
func checkZone(zone string) error {
	if len(zone) > 64 {
		return fmt.Errorf("longer than 64 characters")
	}
	for _, r := range zone {
		if !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return fmt.Errorf("%q has no place in a zone name (letters, digits and '-')", r)
		}
	}
	return nil
}

// Options configure the power collector.
type Options struct {
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
	// Usage reads the jobs' CPU time and memory, shared with the other
	// collectors (nil: a reader of its own).
	Usage *jobcgroup.Provider
	// GPU is the scrape's GPU reading (nil: no GPU energy).
	GPU GPUReader
}

// GPUReader gives the scrape's GPU reading: the gpus provider, or a fake.
type GPUReader interface {
	Read(s provide.Scrape) (*gpus.Reading, error)
}

type powerCollector struct {
	env    *collector.Env
	opts   Options
	d      powerDescs
	zones  []power.Zone
	rapl   *poll.Poller[raplRead]
	ipmi   *poll.Poller[power.DCMIReading]
	live   *poll.Poller[power.Factor]
	owid   *power.CountryFactor
	ledger *power.Ledger
	cpus   float64
	memory float64

	mu sync.Mutex // orders node readings with ledger steps
}

// slowShare: a scrape waits for the BMC or a web API for half of what is
// left of its deadline, so the collector still has time to emit its other
// series; the source's answer then serves a later scrape.
var slowShare = poll.Share{Fraction: 0.5}

// New builds the collector. RAPL zones are listed once here
// (they do not come and go); their absence is not an error, as long as
// some meter or factor remains.
func New(env *collector.Env, o Options) (collector.Collector, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{}
	}
	if o.Usage == nil {
		o.Usage = jobcgroup.New()
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
	c := &powerCollector{env: env, opts: o, d: newPowerDescs(), ledger: power.NewLedger(policy)}
	if o.RAPL {
		c.rapl, c.zones = newRAPLPoller(sysfs, o)
	}
	fetch, err := ipmiSource(o, envLogger(env))
	if err != nil {
		return nil, err
	}
	if fetch != nil {
		c.ipmi = poll.New(fetch, poll.Config{Interval: o.IPMIInterval, Timeout: o.IPMITimeout + time.Second, Wait: slowShare, Now: o.Now})
	}
	if o.Country != "" {
		f, err := power.LookupCountry(o.Country)
		if err != nil {
			return nil, err
		}
		c.owid = &f
	}
	if o.Factor < 0 {
		return nil, fmt.Errorf("--collector.power.emissions.factor must not be negative")
	}
	switch o.Provider {
	case "":
	case "electricitymaps":
		token := os.Getenv(power.ElectricityMapsTokenEnv)
		if token == "" {
			return nil, fmt.Errorf("--collector.power.emissions.provider=electricitymaps needs a token in $%s", power.ElectricityMapsTokenEnv)
		}
		zone := o.Zone
		if zone == "" {
			zone = o.Country
		}
		if zone == "" {
			return nil, errors.New("--collector.power.emissions.provider=electricitymaps needs --collector.power.emissions.zone or --collector.power.emissions.country")
		}
		c.live = c.livePoller(power.ElectricityMaps(o.HTTPClient, orDefault(o.ProviderURL, power.ElectricityMapsURL), zone, token))
	case "rte":
		c.live = c.livePoller(power.RTE(o.HTTPClient, orDefault(o.ProviderURL, power.RTEURL)))
	default:
		return nil, fmt.Errorf("unknown --collector.power.emissions.provider %q (want electricitymaps or rte)", o.Provider)
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
	dcmi, dcmiOK := c.readIPMI(s, ch)
	factor, hasFactor := c.emissions(s, ch)
	var jobs []*discovery.Job
	if c.opts.PerJob {
		jobs = s.Jobs() // discovery may take a while: not under the lock
	}
	gpuDevs := c.gpuEnergy(s) // likewise the scrape's GPU reading

	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.readRAPL(s, ch)
	smp := r.sample
	smp.At = c.opts.Now()
	smp.CPUs, smp.Memory = c.cpus, c.memory
	smp.NodeWatts, smp.HasNode = dcmi.Current, dcmiOK
	smp.Factor, smp.HasFactor = factor, hasFactor
	smp.GPUs, smp.HasGPU = gpuDevs, len(gpuDevs) > 0
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
