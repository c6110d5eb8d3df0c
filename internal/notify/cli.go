// SPDX-License-Identifier: Apache-2.0

package notify

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/jobscope/jobscope/internal/listen"
	"github.com/jobscope/jobscope/slurmcli"
)

// Server bounds: Alertmanager's calls are small and quick; anything slower
// is a broken or hostile client and must not hold a connection.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 30 * time.Second
	writeTimeout      = 30 * time.Second
	idleTimeout       = 2 * time.Minute
	maxHeaderBytes    = 64 << 10
	shutdownWait      = 5 * time.Second
	// tickEvery is how often due retries and digests are looked at.
	tickEvery = time.Second
)

// Main runs `jobscope notify`; args are those after the word notify.
func Main(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("jobscope notify", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	config := fs.String("config", DefaultConfigFile, "The receiver's YAML configuration (docs/notify.md).")
	level := fs.String("log.level", "info", "Log level: debug, info, warn, error.")
	fs.Usage = func() {
		fmt.Fprintf(stdout, "Usage: jobscope notify [--config FILE] [--log.level LEVEL]\n\n"+
			"Receives Alertmanager's webhook (POST /alertmanager), mails each job's owner as Slurm names it,\n"+
			"and, where enabled, acts on jobs. Its own metrics are on GET /metrics.\n\n%s", fs.FlagUsages())
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "jobscope notify: %v (jobscope notify --help lists the flags)\n", err)
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "jobscope notify: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(*level)); err != nil {
		fmt.Fprintf(stderr, "jobscope notify: --log.level %q: %v\n", *level, err)
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lv}))
	cfg, err := LoadConfig(*config)
	if err != nil {
		log.Error("cannot start", "err", err)
		return 1
	}
	srv, err := newServer(cfg, log)
	if err != nil {
		log.Error("cannot start", "err", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := srv.run(ctx); err != nil {
		log.Error("stopped", "err", err)
		return 1
	}
	return 0
}

// server ties the webhook to the engine.
type server struct {
	cfg   *Config
	log   *slog.Logger
	eng   *engine
	h     *handler
	inbox chan []Alert
}

func newServer(cfg *Config, log *slog.Logger) (*server, error) {
	token, err := readSecret(cfg.WebhookTokenFile)
	if err != nil {
		return nil, fmt.Errorf("webhook_token_file: %w", err)
	}
	snd, err := newSMTPSender(cfg.SMTP)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.StateDir, 0o700); err != nil {
		return nil, fmt.Errorf("state_dir: %w", err)
	}
	m := newMetrics()
	runner := &slurmcli.Runner{BinDir: cfg.Slurm.BinDir, Timeout: time.Duration(cfg.Slurm.Timeout), MaxOutput: 1 << 20, Logger: log}
	eng := newEngine(cfg, log, m, runner, snd)
	st, err := loadState(cfg.StateDir)
	if err != nil {
		eng.once(causeState, "state not read; starting empty", "err", err)
	}
	eng.st = st
	inbox := make(chan []Alert, inboxSize)
	h := &handler{token: sha256.Sum256([]byte(token)), m: m, inbox: inbox, once: eng.errs.report}
	return &server{cfg: cfg, log: log, eng: eng, h: h, inbox: inbox}, nil
}

func (s *server) run(ctx context.Context) error {
	// Owner and group only: the group is Alertmanager's.
	l, err := listen.Open(s.cfg.Listen, 0o660)
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: newMux(s.h), ReadHeaderTimeout: readHeaderTimeout, ReadTimeout: readTimeout,
		WriteTimeout: writeTimeout, IdleTimeout: idleTimeout, MaxHeaderBytes: maxHeaderBytes,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(l) }()
	s.log.Info("jobscope notify started", "listen", s.cfg.Listen, "dry_run", *s.cfg.DryRun, "state_dir", s.cfg.StateDir,
		"actions", len(s.cfg.Actions))
	stop, done := make(chan struct{}), make(chan struct{})
	go func() { s.loop(stop); close(done) }()
	select {
	case err = <-errc:
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), shutdownWait)
		defer cancel()
		err = hs.Shutdown(sctx)
	}
	close(stop)
	<-done
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// loop is the engine's one goroutine: webhook calls as they come, due
// work once a second. Its Slurm commands and mails are not cut short by
// SIGTERM; at stop, calls already answered 200 are still filed (and saved),
// since Alertmanager will not send them again.
func (s *server) loop(stop <-chan struct{}) {
	ctx := context.Background()
	t := time.NewTicker(tickEvery)
	defer t.Stop()
	s.eng.tick(ctx, time.Now()) // what a previous run left due
	for {
		select {
		case <-stop:
			for {
				select {
				case alerts := <-s.inbox:
					s.eng.process(ctx, time.Now(), alerts)
				default:
					return
				}
			}
		case alerts := <-s.inbox:
			s.eng.process(ctx, time.Now(), alerts)
		case now := <-t.C:
			if d := s.eng.nextDue(); !d.IsZero() && !now.Before(d) {
				s.eng.tick(ctx, now)
			}
		}
	}
}
