package main

import (
	"time"

	"github.com/spf13/pflag"
)

// defaultListen is outside 9100-9999, which Prometheus's port list has
// fully handed out, and is used by no well-known exporter.
const defaultListen = ":10817"

type options struct {
	listen, webConfig, metricsPath string
	systemdSocket                  bool
	cgroupfs, procfs, sysfs        string
	logLevel, logFormat            string
	mode                           string
	scrapeTimeout                  time.Duration
	maxRequests                    int
	propsDir                       string
	scontrolFallback               bool
	scontrolTimeout                time.Duration
	version, helpMan               bool
}

func registerFlags(fs *pflag.FlagSet) *options {
	o := &options{}
	fs.StringVar(&o.listen, "web.listen-address", defaultListen, "Address to listen on for the web interface and /metrics.")
	fs.StringVar(&o.webConfig, "web.config.file", "", "Path to a web configuration file for TLS and basic auth (prometheus/exporter-toolkit format); validated at start.")
	fs.BoolVar(&o.systemdSocket, "web.systemd-socket", false, "Use systemd socket activation listeners instead of port listeners.")
	fs.StringVar(&o.metricsPath, "web.telemetry-path", "/metrics", "Path under which to expose metrics.")
	fs.DurationVar(&o.scrapeTimeout, "web.scrape-timeout", 10*time.Second, "Longest a scrape may take; Prometheus's X-Prometheus-Scrape-Timeout-Seconds shortens it.")
	fs.IntVar(&o.maxRequests, "web.max-requests", 2, "Scrapes served at once; more wait for a slot until their deadline, then get 503.")
	fs.StringVar(&o.mode, "mode", "node", "Role: node (per-job metrics on a compute node) or controller (cluster metrics from Slurm commands); picks the default collectors.")
	fs.StringVar(&o.cgroupfs, "path.cgroupfs", "", "cgroup filesystem root; empty detects the mounts from /proc/self/mountinfo. A given tree's version (v1, v2, hybrid) is recognised from the tree.")
	fs.StringVar(&o.procfs, "path.procfs", "/proc", "procfs mount point.")
	fs.StringVar(&o.sysfs, "path.sysfs", "/sys", "sysfs mount point.")
	fs.StringVar(&o.propsDir, "slurm.job-props-dir", "/run/jobscope/jobs", "Directory where the Slurm prolog writes one KEY=VALUE file per job (contrib/slurm/prolog.sh); first source of job metadata.")
	fs.BoolVar(&o.scontrolFallback, "slurm.scontrol-fallback", true, "Ask scontrol (show job, cached per job, at most 3 tries) for metadata that neither the props directory nor the job's environment gave.")
	fs.DurationVar(&o.scontrolTimeout, "slurm.scontrol-timeout", 5*time.Second, "Timeout of one scontrol run for job metadata.")
	fs.StringVar(&o.logLevel, "log.level", "info", "Log level: debug, info, warn, error.")
	fs.StringVar(&o.logFormat, "log.format", "text", "Log format: text (human-readable, coloured on a terminal) or json.")
	fs.BoolVar(&o.version, "version", false, "Print the version, the build's GPU support and exit.")
	// Packaging writes the man page from the flag set the binary parses.
	fs.BoolVar(&o.helpMan, "help-man", false, "Print the man page (roff) and exit.")
	_ = fs.MarkHidden("help-man")
	return o
}
