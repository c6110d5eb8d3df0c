// SPDX-License-Identifier: Apache-2.0

package report

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	promconfig "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
	"github.com/spf13/pflag"
)

// Exit statuses of `jobscope report`.
const (
	ExitOK        = 0
	ExitFailed    = 1 // unknown job, no samples, Prometheus unreachable or slow
	ExitUsage     = 2 // bad flags or configuration
	ExitAmbiguous = 3 // a reused job id: pick one with --job-key or --reused=latest
)

type cliFlags struct {
	config, format, output, color, reused, jobKey string
	url, username, passwordFile, tokenFile        string
	caFile, certFile, keyFile, serverName         string
	insecure, ended                               bool
	timeout                                       time.Duration
	cluster, lookback, sacct                      string
	user, account, partition, since, until        string
	jobs                                          int
}

func newFlagSet(stderr io.Writer) (*pflag.FlagSet, *cliFlags) {
	f := &cliFlags{}
	fs := pflag.NewFlagSet("jobscope report", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.SortFlags = false
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: jobscope report [flags] JOBID...\n"+
			"       jobscope report [flags] --user U | --account A | --partition P [--since 30d]\n\n"+
			"A job's efficiency report, with warnings and advice, from Prometheus (docs/report.md).\n\n")
		fs.PrintDefaults()
	}
	def := os.Getenv("JOBSCOPE_REPORT_CONFIG")
	if def == "" {
		def = DefaultConfigFile
	}
	fs.StringVar(&f.config, "config", def, "Site configuration file (Prometheus, thresholds); a missing default file is fine. Env: JOBSCOPE_REPORT_CONFIG.")
	fs.StringVar(&f.url, "prometheus.url", "", "Prometheus base URL (default from the config file, else http://localhost:9090).")
	fs.DurationVar(&f.timeout, "prometheus.timeout", 0, "Longest wait for one Prometheus answer (default 30s).")
	fs.StringVar(&f.username, "prometheus.username", "", "Basic auth user name.")
	fs.StringVar(&f.passwordFile, "prometheus.password-file", "", "File holding the basic auth password.")
	fs.StringVar(&f.tokenFile, "prometheus.bearer-token-file", "", "File holding a bearer token.")
	fs.StringVar(&f.caFile, "prometheus.tls.ca-file", "", "CA certificate file to verify Prometheus's certificate.")
	fs.StringVar(&f.certFile, "prometheus.tls.cert-file", "", "Client certificate file (TLS client authentication).")
	fs.StringVar(&f.keyFile, "prometheus.tls.key-file", "", "Client key file.")
	fs.StringVar(&f.serverName, "prometheus.tls.server-name", "", "Server name to verify the certificate against.")
	fs.BoolVar(&f.insecure, "prometheus.tls.insecure-skip-verify", false, "Do not verify Prometheus's certificate.")
	fs.StringVar(&f.format, "format", "text", "Output: text, json, html (one self-contained page), csv (usage only).")
	fs.StringVarP(&f.output, "output", "o", "", "Write to this file instead of stdout; %j in the name is the job id.")
	fs.StringVar(&f.color, "color", "auto", "Colour in text output: auto (on a terminal), always, never.")
	fs.StringVar(&f.cluster, "cluster", "", "Only jobs of this cluster (slurm_job_info's cluster label).")
	fs.StringVar(&f.lookback, "lookback", "", "How far back to look for a job id (default 30d).")
	fs.StringVar(&f.jobKey, "job-key", "", "Report the job with this job_key (for a reused job id).")
	fs.StringVar(&f.reused, "reused", "ask", "A job id that names several jobs: ask (list them, exit 3) or latest (report the latest, say so).")
	fs.BoolVar(&f.ended, "ended", false, "The job has ended (for epilogs): report it as ended even before slurmdbd and Prometheus know.")
	fs.StringVar(&f.sacct, "sacct", "", "Ask sacct for submit time, time limit and final state: auto, always, never (default auto).")
	fs.StringVar(&f.user, "user", "", "Usage summary of this user's jobs.")
	fs.StringVar(&f.account, "account", "", "Usage summary of this account's jobs.")
	fs.StringVar(&f.partition, "partition", "", "Usage summary of this partition's jobs.")
	fs.StringVar(&f.since, "since", "30d", "Usage period start: a duration before --until (30d, 12h) or a date (2026-01-01).")
	fs.StringVar(&f.until, "until", "", "Usage period end (default now).")
	fs.IntVar(&f.jobs, "jobs", 0, "Jobs listed in the usage text (default 15).")
	return fs, f
}

// FlagSet is the report's flags, for the man page.
func FlagSet() *pflag.FlagSet {
	fs, _ := newFlagSet(io.Discard)
	return fs
}

// Main runs `jobscope report` and returns its exit status.
func Main(args []string, stdout, stderr io.Writer, isTTY bool) int {
	return mainWith(context.Background(), args, stdout, stderr, isTTY, Options{})
}

func mainWith(ctx context.Context, args []string, stdout, stderr io.Writer, isTTY bool, base Options) int {
	// Errors quote job names, Slurm's answers and servers' replies.
	stderr = lineSafeWriter{stderr}
	if len(args) > 0 && args[0] == "summaries" {
		return summariesMain(ctx, args[1:], stdout, stderr, base)
	}
	fs, f := newFlagSet(stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return ExitOK
		}
		return ExitUsage
	}
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "jobscope report: "+format+"\n", a...)
		return ExitUsage
	}
	explicit := fs.Changed("config") || os.Getenv("JOBSCOPE_REPORT_CONFIG") != ""
	cfg, err := LoadConfig(f.config, explicit)
	if err != nil {
		return usageErr("config: %v", err)
	}
	if err := f.apply(&cfg); err != nil {
		return usageErr("%v", err)
	}
	o := base
	o.Config, o.JobKey, o.Reused, o.Ended = cfg, f.jobKey, f.reused, f.ended
	if f.reused != "ask" && f.reused != "latest" {
		return usageErr("--reused %q: want ask or latest", f.reused)
	}
	color := f.color == "always" || f.color == "auto" && isTTY && f.output == "" && os.Getenv("NO_COLOR") == "" &&
		os.Getenv("TERM") != "dumb"
	if f.color != "auto" && f.color != "always" && f.color != "never" {
		return usageErr("--color %q: want auto, always or never", f.color)
	}
	usage := f.user != "" || f.account != "" || f.partition != ""
	switch {
	case usage && fs.NArg() > 0:
		return usageErr("give job ids or --user/--account/--partition, not both")
	case !usage && fs.NArg() == 0:
		// One line that says what is missing; the flags are one --help away.
		return usageErr("no job id: give one (jobscope report 4242) or a usage filter (jobscope report --user alice " +
			"--since 30d); --help lists the flags")
	case !usage && f.format == "csv":
		return usageErr("--format=csv is for usage summaries (--user/--account/--partition)")
	case usage && f.format == "html":
		return usageErr("--format=html is for job reports")
	case f.format != "text" && f.format != "json" && f.format != "html" && f.format != "csv":
		return usageErr("--format %q: want text, json, html or csv", f.format)
	case fs.NArg() > 1 && f.format == "html" && !strings.Contains(f.output, "%j"):
		return usageErr("several jobs as HTML need --output with %%j (one page per job)")
	}
	if cfg.Service != "" && !fs.Changed("prometheus.url") {
		// The site's report service asks Prometheus and Slurm for the
		// user, who proves who they are with MUNGE (remote.go).
		return runRemote(ctx, cfg, f, fs.Args(), stdout, stderr, color)
	}
	if usage {
		return runUsage(ctx, o, f, stdout, stderr, color)
	}
	return runJobs(ctx, o, f, fs.Args(), stdout, stderr, color)
}

// apply puts the flags that were given over the configuration.
func (f *cliFlags) apply(cfg *Config) error {
	p := &cfg.Prometheus
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	set(&p.URL, f.url)
	if f.timeout > 0 {
		p.Timeout = model.Duration(f.timeout)
	}
	if f.username != "" || f.passwordFile != "" {
		if p.HTTP.BasicAuth == nil {
			p.HTTP.BasicAuth = new(promconfig.BasicAuth)
		}
		set(&p.HTTP.BasicAuth.Username, f.username)
		set(&p.HTTP.BasicAuth.PasswordFile, f.passwordFile)
	}
	if f.tokenFile != "" {
		p.HTTP.Authorization = &promconfig.Authorization{Type: "Bearer", CredentialsFile: f.tokenFile}
	}
	tls := &p.HTTP.TLSConfig
	set(&tls.CAFile, f.caFile)
	set(&tls.CertFile, f.certFile)
	set(&tls.KeyFile, f.keyFile)
	set(&tls.ServerName, f.serverName)
	if f.insecure {
		tls.InsecureSkipVerify = true
	}
	set(&cfg.Cluster, f.cluster)
	set(&cfg.Sacct, f.sacct)
	if f.lookback != "" {
		d, err := model.ParseDuration(f.lookback)
		if err != nil {
			return fmt.Errorf("--lookback: %v", err)
		}
		cfg.Lookback = d
	}
	if f.jobs > 0 {
		cfg.Usage.Jobs = f.jobs
	}
	return cfg.Validate()
}
