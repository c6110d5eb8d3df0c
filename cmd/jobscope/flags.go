// SPDX-License-Identifier: Apache-2.0

package main

import (
	"errors"
	"log/slog"
	"time"

	"github.com/prometheus/exporter-toolkit/web"

	"github.com/spf13/pflag"

	"github.com/jobscope/jobscope/collector"
	"github.com/jobscope/jobscope/collector/provide"
	"github.com/jobscope/jobscope/internal/flagval"
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
	level                          collector.Level
	scrapeTimeout                  time.Duration
	maxRequests                    int
	propsDir                       string
	nodeNames                      []string
	version, helpMan               bool
	// providers are the collectors' shared inputs, each with its flags.
	providers *provide.Set
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
	fs.Var(&o.level, "metrics.level", collector.LevelFlagHelp)
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

// registerNodeFlags adds node mode's job discovery flags (the background
// squeue's are the Slurm provider's).
func registerNodeFlags(fs *pflag.FlagSet, o *options) {
	flagval.String(fs, &o.propsDir, "slurm.job-props-dir", "/run/jobscope/jobs", "Directory where the Slurm prolog writes one KEY=VALUE file per job (contrib/slurm/prolog.sh); first source of job metadata. It may not exist yet (the prolog creates it with the first job).", flagval.DirLater)
	fs.StringSliceVar(&o.nodeNames, "slurm.node-name", nil, "Node mode: this node's Slurm NodeName(s) for squeue --nodelist; default: from <node>_slurmstepd.scope or slurm_<node> directories, else the short host name.")
	flagval.Check(fs, "slurm.node-name", flagval.Each(checkNodeName))
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
