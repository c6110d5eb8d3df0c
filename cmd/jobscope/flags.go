// SPDX-License-Identifier: Apache-2.0

package main

import (
	"errors"
	"log/slog"
	"time"

	"github.com/prometheus/exporter-toolkit/web"

	"github.com/spf13/pflag"

	"github.com/jobscope/jobscope/collector"
	"github.com/jobscope/jobscope/internal/flagval"
	"github.com/jobscope/jobscope/provide"
	"github.com/jobscope/jobscope/slurmcli"
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
	level                          string
	scrapeTimeout                  time.Duration
	maxRequests                    int
	propsDir                       string
	nodeMeta                       nodeMetaOptions
	scontrolFallback               bool          // deprecated: see nodeMetaOptions
	scontrolTimeout                time.Duration // deprecated
	version, helpMan               bool
	// providers are the collectors' shared inputs, each with its flags.
	providers *provide.Set
}

// nodeMetaOptions configure node mode's background squeue for job metadata.
type nodeMetaOptions struct {
	squeue            bool
	command           string
	interval, timeout time.Duration
	format            string
	nodeNames         []string
}

func registerFlags(fs *pflag.FlagSet) *options {
	o := &options{}
	inGroup(fs, groupCommon, func() { registerCommonFlags(fs, o) })
	inGroup(fs, groupNode, func() { registerNodeFlags(fs, o) })
	return o
}

// registerCommonFlags adds the flags of both modes: web server, logging,
// paths, metrics level.
func registerCommonFlags(fs *pflag.FlagSet, o *options) {
	flagval.String(fs, &o.listen, "web.listen-address", defaultListen, "Address to listen on for the web interface and /metrics: host:port (empty host: every address) or vsock://:port.", flagval.ListenAddress)
	flagval.String(fs, &o.webConfig, "web.config.file", "", "Path to a web configuration file for TLS and basic auth (prometheus/exporter-toolkit format); validated at start.", checkWebConfig)
	fs.BoolVar(&o.systemdSocket, "web.systemd-socket", false, "Use systemd socket activation listeners instead of port listeners.")
	flagval.String(fs, &o.metricsPath, "web.telemetry-path", "/metrics", "Path under which to expose metrics (starts with /).", flagval.HTTPPath)
	flagval.Duration(fs, &o.scrapeTimeout, "web.scrape-timeout", 10*time.Second, 1, "Longest a scrape may take; Prometheus's X-Prometheus-Scrape-Timeout-Seconds shortens it.")
	flagval.Int(fs, &o.maxRequests, "web.max-requests", 2, 1, "Scrapes served at once; more wait for a slot until their deadline, then get 503.")
	flagval.Enum(fs, &o.mode, "mode", "node", []string{"node", "controller"}, "Role: node (per-job metrics on a compute node) or controller (cluster metrics from Slurm commands); picks the default collectors.")
	flagval.Enum(fs, &o.level, "metrics.level", "basic", []string{"basic", "full"}, collector.LevelFlagHelp)
	flagval.String(fs, &o.cgroupfs, "path.cgroupfs", "", "cgroup filesystem root; empty detects the mounts from /proc/self/mountinfo. A given tree's version (v1, v2, hybrid) is recognised from the tree; a given directory must exist.", flagval.Optional(flagval.Dir))
	flagval.String(fs, &o.procfs, "path.procfs", "/proc", "procfs mount point.", flagval.Dir)
	flagval.String(fs, &o.sysfs, "path.sysfs", "/sys", "sysfs mount point.", flagval.Dir)
	flagval.String(fs, &o.logLevel, "log.level", "info", "Log level: debug, info, warn, error.", func(v string) error { return new(slog.Level).UnmarshalText([]byte(v)) })
	flagval.Enum(fs, &o.logFormat, "log.format", "text", []string{"text", "logfmt", "json"}, "Log format: text (human-readable, coloured on a terminal) or json.")
	fs.BoolVar(&o.version, "version", false, "Print the version, the build's GPU support and exit.")
	// Packaging writes the man page from the flag set the binary parses.
	fs.BoolVar(&o.helpMan, "help-man", false, "Print the man page (roff) and exit.")
	_ = fs.MarkHidden("help-man")
}

// registerNodeFlags adds node mode's job metadata flags.
func registerNodeFlags(fs *pflag.FlagSet, o *options) {
	flagval.String(fs, &o.propsDir, "slurm.job-props-dir", "/run/jobscope/jobs", "Directory where the Slurm prolog writes one KEY=VALUE file per job (contrib/slurm/prolog.sh); first source of job metadata. It may not exist yet (the prolog creates it with the first job).", flagval.DirLater)
	fs.BoolVar(&o.nodeMeta.squeue, "slurm.node-metadata.squeue", true, "Node mode: fill job metadata that neither the props directory nor the job's environment gives (and the job id of a Slurm 26.05 SLUID directory) from one background squeue for all of this node's jobs. Never runs inside a scrape: a job is exported at once and filled in later.")
	flagval.String(fs, &o.nodeMeta.command, "slurm.node-metadata.squeue-command", "squeue", "Node mode: the squeue to run (a path, or a name looked up in PATH); a given one must exist.", flagval.Command)
	flagval.Duration(fs, &o.nodeMeta.interval, "slurm.node-metadata.interval", 30*time.Second, 1, "Node mode: least time between two background squeue runs; they run only while a job lacks metadata. After a failure the wait doubles, up to 10 minutes.")
	flagval.Duration(fs, &o.nodeMeta.timeout, "slurm.node-metadata.timeout", 10*time.Second, 1, "Node mode: kill a background squeue (its whole process group) after this long.")
	flagval.Enum(fs, &o.nodeMeta.format, "slurm.node-metadata.format", string(slurmcli.FormatAuto), []string{"auto", "json", "text"}, "Node mode: squeue output: auto (text, JSON where a SLUID directory needs its job id), json or text (no SLUIDs).")
	fs.StringSliceVar(&o.nodeMeta.nodeNames, "slurm.node-name", nil, "Node mode: this node's Slurm NodeName(s) for squeue --nodelist; default: from <node>_slurmstepd.scope or slurm_<node> directories, else the short host name.")
	flagval.Check(fs, "slurm.node-name", flagval.Each(checkNodeName))
	fs.BoolVar(&o.scontrolFallback, "slurm.scontrol-fallback", true, "Deprecated: job metadata no longer comes from scontrol. =false turns the background squeue off, like --slurm.node-metadata.squeue=false.")
	flagval.Duration(fs, &o.scontrolTimeout, "slurm.scontrol-timeout", 5*time.Second, 1, "Deprecated: use --slurm.node-metadata.timeout.")
}

// checkWebConfig reads and checks the web configuration file at start: a
// file that cannot be read or parsed stops the start, rather than leaving
// /metrics open without the TLS or auth it asked for.
func checkWebConfig(path string) error {
	if path == "" {
		return nil
	}
	return web.Validate(path)
}

// checkNodeName accepts a Slurm NodeName as squeue --nodelist takes it.
func checkNodeName(s string) error {
	if !slurmcli.ValidNodeName(s) {
		return errors.New("not a node name (letters, digits, '-', '_' and '.')")
	}
	return nil
}
