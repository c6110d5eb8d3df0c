// SPDX-License-Identifier: Apache-2.0

// Package service is `jobscope-report serve`: the report made for a caller
// who proves their uid with MUNGE (or, in a browser, whom a configured
// authenticating proxy names), allowed by Slurm's own rules. It alone holds
// the Prometheus credentials; users need none.
package service

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/jobscope/jobscope/internal/mungeauth"
	"github.com/jobscope/jobscope/internal/termsafe"
	"github.com/jobscope/jobscope/slurmcli"
)

// Server answers report requests.
type Server struct {
	cfg    Config
	access *Access
	munge  mungeauth.Munge
	log    *slog.Logger
	reg    *prometheus.Registry
	// decisions counts every request's outcome.
	decisions *prometheus.CounterVec
	sem       chan struct{}
	nonces    nonces
	// logged holds the causes already logged: each is logged once, then
	// only counted.
	logged sync.Map
	// Transport replaces the Prometheus client's (tests).
	Transport http.RoundTripper
	// Now is the clock (tests).
	Now func() time.Time
}

// New builds a server from a validated configuration.
func New(cfg Config, log *slog.Logger) *Server {
	slurm := &slurmcli.Runner{Timeout: time.Duration(cfg.Slurm.Timeout), MaxOutput: 64 << 20, Logger: log,
		Paths: map[string]string{}}
	if cfg.Slurm.SacctPath != "" {
		slurm.Paths["sacct"] = cfg.Slurm.SacctPath
	}
	if cfg.Slurm.SacctmgrPath != "" {
		slurm.Paths["sacctmgr"] = cfg.Slurm.SacctmgrPath
	}
	s := &Server{
		cfg:    cfg,
		access: &Access{Slurm: slurm, Cluster: cfg.Report.Cluster, TTL: time.Duration(cfg.CacheTTL)},
		munge: mungeauth.Munge{Socket: cfg.Munge.Socket, UnmungePath: cfg.Munge.UnmungePath,
			Timeout: time.Duration(cfg.Munge.Timeout)},
		log: log,
		reg: prometheus.NewPedanticRegistry(),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "jobscope_report_service_requests_total",
			Help: "Requests to the report service by decision (allowed, refused, failed) and reason " +
				"(a MUNGE status, a Slurm rule, a limit). Counted at the decision, not cached.",
		}, []string{"decision", "reason"}),
		sem: make(chan struct{}, cfg.MaxConcurrent),
	}
	s.reg.MustRegister(s.decisions)
	return s
}

func (s *Server) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

type ctxKey int

const unixConnKey ctxKey = 0

// HTTPServer is the server with its limits: bounded header and body
// reads, write time and header size, so a slow or hostile client holds
// nothing for long.
func (s *Server) HTTPServer() *http.Server {
	return &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      time.Duration(s.cfg.RequestTimeout) + 10*time.Second,
		IdleTimeout:       time.Minute,
		MaxHeaderBytes:    16 << 10,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			_, unix := c.(*net.UnixConn)
			return context.WithValue(ctx, unixConnKey, unix)
		},
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
}

// Handler routes the requests.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /v1/job/{id}", s.guard(s.job))
	mux.HandleFunc("GET /v1/usage", s.guard(s.usage))
	mux.HandleFunc("GET /{$}", s.guard(s.page))
	return mux
}

// guard bounds a request (concurrency, time, no body), finds who asks and
// hands it on; every refusal is counted and logged once per cause.
func (s *Server) guard(h func(http.ResponseWriter, *http.Request, Caller)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, 0)
		select {
		case s.sem <- struct{}{}:
			defer func() { <-s.sem }()
		default:
			s.refuse(w, &Refusal{503, reasonOverloaded, "the report service is busy: try again in a minute"})
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), time.Duration(s.cfg.RequestTimeout))
		defer cancel()
		r = r.WithContext(ctx)
		c, err := s.identify(r)
		if err != nil {
			s.refuse(w, err)
			return
		}
		h(w, r, c)
	}
}

// identify: a MUNGE credential bound to this request, else the proxy's
// header from a trusted peer; nothing else names a caller.
func (s *Server) identify(r *http.Request) (Caller, *Refusal) {
	ctx := r.Context()
	if a := r.Header.Values("Authorization"); len(a) > 0 {
		scheme, cred, _ := strings.Cut(a[0], " ")
		if len(a) != 1 || !strings.EqualFold(scheme, mungeauth.Scheme) {
			return Caller{}, &Refusal{401, mungeauth.ReasonMalformed, "Authorization: want one MUNGE credential"}
		}
		id, err := s.munge.Verify(ctx, cred, r.Method, r.URL.RequestURI(), s.now())
		if err != nil {
			var me *mungeauth.Error
			if errors.As(err, &me) && me.Reason != mungeauth.ReasonUnavailable {
				return Caller{}, &Refusal{401, me.Reason, "MUNGE credential refused: " + me.Reason}
			}
			s.log.Warn("report service: munged", "err", termsafe.Log(err.Error()))
			return Caller{}, &Refusal{503, mungeauth.ReasonUnavailable, "the report service cannot reach munged"}
		}
		switch ok, full := s.nonces.fresh(id.Nonce, s.now()); {
		case full:
			return Caller{}, &Refusal{503, reasonOverloaded, "the report service is busy: try again in a minute"}
		case !ok:
			return Caller{}, &Refusal{401, mungeauth.ReasonReplayed, "MUNGE credential refused: " + mungeauth.ReasonReplayed}
		}
		c, err := s.access.CallerByUID(ctx, id.UID)
		return c, asRefusal(err)
	}
	p := s.cfg.Proxy
	if p.Header != "" {
		if v := r.Header.Values(p.Header); len(v) > 0 {
			if !s.fromProxy(r) {
				return Caller{}, &Refusal{403, reasonUntrusted, "the user header is accepted from the configured proxy only"}
			}
			if len(v) != 1 {
				return Caller{}, &Refusal{400, reasonBadUser, "the user header is repeated"}
			}
			c, err := s.access.CallerByName(ctx, strings.TrimSpace(v[0]))
			return c, asRefusal(err)
		}
	}
	return Caller{}, &Refusal{401, mungeauth.ReasonMissing, "no credential: run jobscope report, which sends a MUNGE credential"}
}

func (s *Server) fromProxy(r *http.Request) bool {
	if unix, _ := r.Context().Value(unixConnKey).(bool); unix {
		return s.cfg.Proxy.UnixSocket
	}
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	return err == nil && s.cfg.Proxy.trusts(ap.Addr())
}

func asRefusal(err error) *Refusal {
	if err == nil {
		return nil
	}
	var rf *Refusal
	if errors.As(err, &rf) {
		return rf
	}
	return &Refusal{500, reasonReportError, err.Error()}
}

// decide counts a decision and logs its cause the first time.
func (s *Server) decide(decision, reason, msg string) {
	s.decisions.WithLabelValues(decision, reason).Inc()
	if _, seen := s.logged.LoadOrStore(decision+"/"+reason, true); !seen {
		lvl := slog.LevelInfo
		if decision != "allowed" {
			lvl = slog.LevelWarn
		}
		s.log.Log(context.Background(), lvl, "report service decision (logged once per cause, then counted in "+
			"jobscope_report_service_requests_total)", "decision", decision, "reason", reason, "detail", termsafe.Log(msg))
	}
}

// refuse answers one line; the client prints it and exits with ExitHeader.
func (s *Server) refuse(w http.ResponseWriter, rf *Refusal) {
	decision := "refused"
	if rf.Status >= 500 {
		decision = "failed"
	}
	s.decide(decision, rf.Reason, rf.Msg)
	exit := "1"
	if rf.Status == 400 {
		exit = "2"
	}
	if rf.Status == 409 {
		exit = "3"
	}
	w.Header().Set("X-Jobscope-Exit", exit)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(rf.Status)
	_, _ = w.Write([]byte(termsafe.String(firstLine(rf.Msg)) + "\n"))
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	if len(l) > 400 {
		l = l[:400]
	}
	return l
}
