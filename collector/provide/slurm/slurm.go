// SPDX-License-Identifier: Apache-2.0

// Package slurm is the provider of the Slurm command runner and its cache,
// owner of the --slurm.* runner flags: controller mode's one cached
// snapshot per poll interval, shared by every cluster collector, and node
// mode's background squeue for job metadata (which job discovery runs).
// Both run their commands through runners built here, from these flags.
package slurm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/jobscope/jobscope/collector/provide"
	"github.com/jobscope/jobscope/discovery"
	"github.com/jobscope/jobscope/internal/flagval"
	"github.com/jobscope/jobscope/slurmcli"
)

// Name is the provider's name in a collector's Needs.
const Name = "slurm"

// commandNames are the commands --slurm.command-path may point elsewhere.
var commandNames = map[string]bool{"squeue": true, "sinfo": true, "sshare": true, "sdiag": true, "scontrol": true, "sacct": true}

// Provider holds the --slurm.* flags and, once started, the controller's
// command cache.
type Provider struct {
	fs *pflag.FlagSet

	// Controller mode.
	pollInterval, slowInterval, maxAge, timeout time.Duration
	format, binDir                              string
	paths                                       map[string]string
	// Where jobs and nodes come from: the commands or slurmrestd.
	source, restdURL, restdToken string

	// Node mode's background squeue.
	node             nodeOptions
	scontrolFallback bool          // deprecated: see nodeOptions
	scontrolTimeout  time.Duration // deprecated

	cache *slurmcli.Cache
}

// nodeOptions configure node mode's background squeue for job metadata.
type nodeOptions struct {
	squeue            bool
	command           string
	interval, timeout time.Duration
	format            string
}

// New returns the provider; its options come from Flags.
func New() *Provider { return &Provider{} }

// Name implements provide.Provider.
func (p *Provider) Name() string { return Name }

// Flags adds the --slurm.* flags of the runners: the controller's (marked
// with the modes of the collectors that need the provider) and node mode's
// background squeue (marked node mode here: job discovery, not a
// collector, runs it).
func (p *Provider) Flags(fs *pflag.FlagSet) {
	p.fs = fs
	flagval.Duration(fs, &p.pollInterval, "slurm.poll-interval", 30*time.Second, 1,
		"Controller mode: run each Slurm command at most once per this interval, whatever the number of scrapes.")
	flagval.Duration(fs, &p.slowInterval, "slurm.slow-poll-interval", 5*time.Minute, 1,
		"Controller mode: run the commands whose data slurmctld changes seldom (sshare, scontrol show reservation and licenses) at most once per this interval, each an RPC to slurmctld; between runs their values are served from the cache with their age. Never more often than --slurm.poll-interval; a failed run is retried after --slurm.poll-interval.")
	flagval.Duration(fs, &p.maxAge, "slurm.max-age", 10*time.Minute, 0,
		"Controller mode: while Slurm commands fail, keep serving their last good values (with jobscope_slurm_snapshot_age_seconds) up to this age, then drop them; 0 keeps them forever.")
	flagval.Duration(fs, &p.timeout, "slurm.command-timeout", 20*time.Second, 1,
		"Controller mode: kill a Slurm command (its whole process group) after this long.")
	flagval.Enum(fs, &p.format, "slurm.format", string(slurmcli.FormatAuto), []string{string(slurmcli.FormatAuto), string(slurmcli.FormatJSON), string(slurmcli.FormatText)},
		"Controller mode: output format of squeue and sinfo: auto (JSON, text if the version refuses --json), json or text.")
	flagval.String(fs, &p.binDir, "slurm.bin-dir", "",
		"Controller mode: directory of the Slurm commands (default: looked up in PATH); a given one must exist.", flagval.Optional(flagval.Dir))
	flagval.Enum(fs, &p.source, "slurm.source", sourceCommands, []string{sourceCommands, sourceRestd},
		"Controller mode: where jobs and nodes come from: commands (squeue, sinfo) or slurmrestd (GET /slurm/<v>/jobs and /nodes, jobs asked with update_time so that slurmctld answers \"no change\" instead of packing every job again). sshare, sdiag, sacct, reservations and licenses stay commands.")
	flagval.String(fs, &p.restdURL, "slurm.restd.url", slurmcli.DefaultRestdURL,
		"Controller mode, --slurm.source=slurmrestd: slurmrestd's address, unix:///path/to/socket (rest_auth/local: jobscope's uid is the identity) or http://host:port (with --slurm.restd.token-file).", checkRestdURL)
	flagval.String(fs, &p.restdToken, "slurm.restd.token-file", "",
		"Controller mode, --slurm.source=slurmrestd: file holding a JWT (scontrol token) sent as X-SLURM-USER-TOKEN, read at each request and never logged; a given one must exist.", flagval.Optional(flagval.File))
	fs.StringToStringVar(&p.paths, "slurm.command-path", nil,
		"Controller mode: path of single Slurm commands, e.g. squeue=/opt/slurm/bin/squeue; each must exist.")
	flagval.Check(fs, "slurm.command-path", flagval.Each(checkCommandPath))

	before := map[string]bool{}
	fs.VisitAll(func(f *pflag.Flag) { before[f.Name] = true })
	nm := &p.node
	fs.BoolVar(&nm.squeue, "slurm.node-metadata.squeue", true, "Node mode: fill job metadata that neither the props directory nor the job's environment gives (and the job id of a Slurm 26.05 SLUID directory) from one background squeue for all of this node's jobs. Never runs inside a scrape: a job is exported at once and filled in later.")
	flagval.String(fs, &nm.command, "slurm.node-metadata.squeue-command", "squeue", "Node mode: the squeue to run (a path, or a name looked up in PATH); a given one must exist.", flagval.Command)
	flagval.Duration(fs, &nm.interval, "slurm.node-metadata.interval", 30*time.Second, 1, "Node mode: least time between two background squeue runs; they run only while a job lacks metadata. After a failure the wait doubles, up to 10 minutes.")
	flagval.Duration(fs, &nm.timeout, "slurm.node-metadata.timeout", 10*time.Second, 1, "Node mode: kill a background squeue (its whole process group) after this long.")
	flagval.Enum(fs, &nm.format, "slurm.node-metadata.format", string(slurmcli.FormatAuto), []string{"auto", "json", "text"}, "Node mode: squeue output: auto (text, JSON where a SLUID directory needs its job id), json or text (no SLUIDs).")
	fs.BoolVar(&p.scontrolFallback, "slurm.scontrol-fallback", true, "Deprecated: job metadata no longer comes from scontrol. =false turns the background squeue off, like --slurm.node-metadata.squeue=false.")
	flagval.Duration(fs, &p.scontrolTimeout, "slurm.scontrol-timeout", 5*time.Second, 1, "Deprecated: use --slurm.node-metadata.timeout.")
	fs.VisitAll(func(f *pflag.Flag) {
		if !before[f.Name] {
			_ = fs.SetAnnotation(f.Name, provide.ModeAnnotation, []string{provide.ModeNode})
		}
	})
}

// Values of --slurm.source.
const (
	sourceCommands = "commands"
	sourceRestd    = "slurmrestd"
)

func checkRestdURL(s string) error {
	_, _, err := slurmcli.ParseRestdURL(s)
	return err
}

// checkCommandPath accepts one name=path of --slurm.command-path: a Slurm
// command jobscope runs, and an absolute path to an existing file.
func checkCommandPath(kv string) error {
	name, path, ok := strings.Cut(kv, "=")
	switch {
	case !ok:
		return errors.New("want command=path")
	case !commandNames[name]:
		return fmt.Errorf("unknown command %q", name)
	case !filepath.IsAbs(path):
		return fmt.Errorf("%s is not an absolute path", path)
	}
	return flagval.File(path)
}

// Start builds the controller's command cache from the flags. Every error
// is an option value.
func (p *Provider) Start(env *provide.Env) error {
	if p.fs == nil {
		return errors.New("--slurm.* flags are not registered")
	}
	if p.pollInterval <= 0 {
		return fmt.Errorf("--slurm.poll-interval must be positive, got %s", p.pollInterval)
	}
	if p.maxAge < 0 {
		return fmt.Errorf("--slurm.max-age must not be negative, got %s", p.maxAge)
	}
	if p.slowInterval <= 0 {
		return fmt.Errorf("--slurm.slow-poll-interval must be positive, got %s", p.slowInterval)
	}
	// A slow source's value is up to a slow interval old between two good
	// runs: a maximum age below that would drop it every time. A site that
	// set only a short --slurm.max-age (which worked before this interval
	// existed) gets half its maximum age; one that set both is told.
	slow := p.slowInterval
	if p.maxAge > 0 && slow >= p.maxAge && !p.fs.Changed("slurm.slow-poll-interval") {
		slow = max(p.maxAge/2, p.pollInterval)
	}
	if p.maxAge > 0 && slow >= p.maxAge {
		return fmt.Errorf("--slurm.slow-poll-interval (%s) must be less than --slurm.max-age (%s): the values of sshare and scontrol show reservation and licenses would be dropped between two runs", slow, p.maxAge)
	}
	format, err := slurmcli.ParseFormat(p.format)
	if err != nil {
		return fmt.Errorf("--slurm.format: %w", err)
	}
	if p.timeout <= 0 {
		return fmt.Errorf("--slurm.command-timeout must be positive, got %s", p.timeout)
	}
	for name, path := range p.paths {
		if !commandNames[name] {
			return fmt.Errorf("--slurm.command-path: unknown command %q", name)
		}
		if !filepath.IsAbs(path) {
			return fmt.Errorf("--slurm.command-path: %s=%q is not an absolute path", name, path)
		}
	}
	runner := &slurmcli.Runner{BinDir: p.binDir, Paths: p.paths, Timeout: p.timeout, Logger: env.Logger}
	var restd *slurmcli.Restd
	switch {
	case p.source == sourceRestd:
		// The command timeout bounds a request too; the body is capped
		// like a command's stdout.
		restd, err = slurmcli.NewRestd(slurmcli.RestdConfig{URL: p.restdURL, TokenFile: p.restdToken,
			Timeout: p.timeout, Logger: env.Logger}, runner.Stats())
		if err != nil {
			return fmt.Errorf("--slurm.restd.url: %w", err)
		}
	case p.source != sourceCommands:
		return fmt.Errorf("--slurm.source: %q: want %s or %s", p.source, sourceCommands, sourceRestd)
	case (p.fs.Changed("slurm.restd.url") || p.fs.Changed("slurm.restd.token-file")) && env.Logger != nil:
		env.Logger.Warn("--slurm.restd.* are set but --slurm.source is commands: slurmrestd is not asked")
	}
	p.cache = slurmcli.NewCache(slurmcli.CacheConfig{Runner: runner, Interval: p.pollInterval, SlowInterval: slow, MaxAge: p.maxAge, Format: format, Restd: restd, Logger: env.Logger, Now: env.Now})
	return nil
}

// Cache is the controller's command cache (after Start).
func (p *Provider) Cache() *slurmcli.Cache { return p.cache }

// Close stops the cache's commands.
func (p *Provider) Close() error {
	if p.cache != nil {
		p.cache.Close()
	}
	return nil
}

// NodeQueue implements provide.JobQueue: node mode's background squeue
// from the --slurm.node-metadata.* flags (nil Queue when it is off).
func (p *Provider) NodeQueue(logger *slog.Logger) (provide.Queue, error) {
	nm := p.node
	if p.fs.Changed("slurm.scontrol-fallback") {
		logger.Warn("--slurm.scontrol-fallback is deprecated: job metadata comes from the props file, the job's environment and one background squeue (--slurm.node-metadata.*); =false turns that squeue off")
		if !p.scontrolFallback && !p.fs.Changed("slurm.node-metadata.squeue") {
			nm.squeue = false
		}
	}
	if p.fs.Changed("slurm.scontrol-timeout") {
		logger.Warn("--slurm.scontrol-timeout is deprecated: use --slurm.node-metadata.timeout")
		if !p.fs.Changed("slurm.node-metadata.timeout") {
			nm.timeout = p.scontrolTimeout
		}
	}
	format, err := slurmcli.ParseFormat(nm.format)
	switch {
	case err != nil:
		return provide.Queue{}, fmt.Errorf("--slurm.node-metadata.format: %w", err)
	case nm.interval <= 0:
		return provide.Queue{}, fmt.Errorf("--slurm.node-metadata.interval must be positive, got %s", nm.interval)
	case nm.timeout <= 0:
		return provide.Queue{}, fmt.Errorf("--slurm.node-metadata.timeout must be positive, got %s", nm.timeout)
	case nm.command == "":
		return provide.Queue{}, errors.New("--slurm.node-metadata.squeue-command is empty")
	}
	q := provide.Queue{Interval: nm.interval, Timeout: nm.timeout}
	if !nm.squeue {
		return q, nil
	}
	// One node's jobs in text are ~100 bytes each: 8 MiB is tens of
	// thousands of jobs, and a runaway squeue costs a compute node at most
	// that (measured by the adversarial suite: 64 MiB let RSS reach 290 MiB).
	r := &slurmcli.Runner{Paths: map[string]string{"squeue": nm.command}, Timeout: nm.timeout,
		MaxOutput: 8 << 20, Logger: logger}
	q.Run = func(ctx context.Context, req discovery.QueueRequest) ([]slurmcli.NodeJob, error) {
		return slurmcli.QueryNodeJobs(ctx, r, req.Nodes, format, req.SLUID)
	}
	return q, nil
}
