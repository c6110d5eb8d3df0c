// SPDX-License-Identifier: Apache-2.0

package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/jobscope/jobscope/internal/listen"
)

// Main runs `jobscope-report serve` until SIGTERM or SIGINT.
func Main(args []string, stderr io.Writer) int {
	fs := pflag.NewFlagSet("jobscope-report serve", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", DefaultConfigFile, "The service's settings (contrib/report-service.yml).")
	level := fs.String("log.level", "info", "debug, info, warn or error.")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		return 2
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(*level)); err != nil {
		fmt.Fprintf(stderr, "jobscope-report serve: --log.level %q\n", *level)
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lvl}))
	cfg, err := LoadConfig(*path)
	if err != nil {
		log.Error("report service: config", "err", err)
		return 2
	}
	ln, err := listen.Open(cfg.Listen, cfg.SocketMode)
	if err != nil {
		log.Error("report service: listen", "err", err)
		return 1
	}
	srv := New(cfg, log).HTTPServer()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	log.Info("report service listening", "address", cfg.Listen)
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Error("report service", "err", err)
		return 1
	}
	return 0
}
