// SPDX-License-Identifier: Apache-2.0

// Command jobscope is a Prometheus exporter for Slurm clusters: per-job
// metrics on compute nodes, cluster metrics on the controller.
package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/exporter-toolkit/web"
	"github.com/spf13/pflag"

	"github.com/jobscope/jobscope/collector"
	"github.com/jobscope/jobscope/collector/provide"
	"github.com/jobscope/jobscope/collector/registry"
	"github.com/jobscope/jobscope/internal/notify"
)

// Set at build time with -ldflags "-X main.version=... -X main.revision=...".
var (
	version  = "dev"
	revision = "unknown"
)

// shutdownWait bounds how long SIGTERM waits for requests in flight, whose
// scrapes were cancelled by the signal: systemd's stop should take seconds.
const shutdownWait = 1500 * time.Millisecond

func main() {
	os.Exit(run(os.Args[1:]))
}

// registerAll adds cmd's own flags, the collectors' and the providers'.
func registerAll(fs *pflag.FlagSet) (*options, *collector.Set) {
	opts := registerFlags(fs)
	set := collector.RegisterFlags(fs, registry.Factories())
	// The providers' flags, after the collectors': a provider's flags are
	// marked with the modes of the collectors that need it.
	opts.providers = provide.NewSet(registry.Providers()...)
	set.RegisterProviderFlags(opts.providers)
	return opts, set
}

// newFlagSet registers every flag the binary parses; the man page
// (--help-man) is written from this same set.
func newFlagSet() (*pflag.FlagSet, *options, *collector.Set) {
	fs := pflag.NewFlagSet("jobscope", pflag.ContinueOnError)
	opts, set := registerAll(fs)
	// --help asked for it: standard output, and exit status 0.
	fs.Usage = func() { writeHelp(os.Stdout, fs) }
	return fs, opts, set
}

// subcommands are the words that run something else than the exporter;
// --help lists them.
func subcommands() []subcommand {
	return []subcommand{
		// The users' side: a job's efficiency report from Prometheus. It
		// is the jobscope-report binary (the daemon links none of its
		// charts); the word stays so users, epilogs and docs keep it.
		{name: "report", args: "JOBID...", help: "a job's efficiency report from Prometheus",
			main: func(args []string) int { return runReport(args, os.Stderr) }},
		// The report service: reports for MUNGE-proven callers and a
		// site's authenticating proxy. It runs jobscope-report serve, so
		// the daemon links none of it.
		{name: "report-service", args: "--config FILE", help: "serve job reports to callers Slurm allows",
			main: func(args []string) int { return runReport(append([]string{"serve"}, args...), os.Stderr) }},
		// The receiver of Alertmanager's webhook: mails a running job's
		// owner (as Slurm names them) and, where enabled, acts on the job.
		{name: "notify", args: "--config FILE", help: "mail job owners about Alertmanager's job alerts",
			main: func(args []string) int { return notify.Main(args, os.Stdout, os.Stderr) }},
	}
}

func run(args []string) int {
	for _, c := range subcommands() {
		if len(args) > 0 && args[0] == c.name {
			return c.main(args[1:])
		}
	}
	fs, opts, set := newFlagSet()
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		// One line, like any wrong flag: the usage is one --help away.
		var unknown *pflag.NotExistError
		if errors.As(err, &unknown) && unknown.GetSpecifiedName() != "" {
			fmt.Fprintf(os.Stderr, "jobscope: %s\n", unknownFlagLine(fs, unknown.GetSpecifiedName()))
		} else {
			fmt.Fprintf(os.Stderr, "jobscope: %v (jobscope --help lists the flags)\n", err)
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "jobscope: %s\n", unknownCommandLine(fs.Arg(0)))
		return 2
	}
	if opts.version {
		fmt.Println(versionLine())
		return 0
	}
	if opts.helpMan {
		if err := writeMan(os.Stdout, fs); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return 0
	}
	logger, err := newLogger(opts.logLevel, opts.logFormat, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	mode := collector.Mode(opts.mode) // checked as it was parsed

	exp, release, err := buildExporter(opts, set, mode, logger)
	if err != nil {
		logger.Error("cannot start", "err", err)
		if errors.As(err, new(*flagError)) {
			return 2
		}
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	// Requests' contexts derive from ctx: SIGTERM ends a scrape in flight
	// (each collector sees its deadline pass and returns), so shutting down
	// waits for no slow scrape.
	srv := newServer(newMux(exp, opts, logger), opts, func(net.Listener) context.Context { return ctx })
	errc := make(chan error, 1)
	go func() {
		listen := []string{opts.listen}
		errc <- web.ListenAndServe(srv, &web.FlagConfig{WebListenAddresses: &listen, WebSystemdSocket: &opts.systemdSocket, WebConfigFile: &opts.webConfig}, logger)
	}()
	logger.Info("jobscope started", "version", version, "mode", mode, "collectors", exp.Names(), "listen", opts.listen)
	select {
	case err := <-errc:
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("HTTP server failed", "err", err)
			return 1
		}
	case <-ctx.Done():
		logger.Info("shutting down")
		sctx, cancel := context.WithTimeout(context.Background(), shutdownWait)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			logger.Warn("shutdown", "err", err)
		}
	}
	release()
	return 0
}
