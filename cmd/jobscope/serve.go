// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"html/template"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/jobscope/jobscope/collector"
)

func newMux(exp *collector.Exporter, o *options, logger *slog.Logger) *http.ServeMux {
	// One registry per scrape binds the scrape's deadline; the Go and
	// process collectors are shared instances registered into each (two
	// gatherers merged would check every series twice).
	goColl := collectors.NewGoCollector()
	procColl := collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})
	handlerOpts := promhttp.HandlerOpts{
		ErrorHandling:      promhttp.ContinueOnError,
		ErrorLog:           slog.NewLogLogger(logger.Handler(), slog.LevelError),
		DisableCompression: true,
	}
	// Each scrape reads every job: a burst of scrapers queues here rather
	// than multiplying the node's load; one that waits past its deadline
	// gets 503. A slot covers gathering and encoding the answer into
	// memory, never sending it: a client that does not read (or reads
	// slowly) would otherwise keep its slot for as long as it stays
	// connected, and every other scrape would get 503.
	slots := make(chan struct{}, max(1, o.maxRequests))
	idle := newIdleRelease(releaseQuiet, collector.Mode(o.mode) == collector.ModeNode)
	mux := http.NewServeMux()
	mux.Handle(o.metricsPath, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		idle.begin()
		defer idle.end() // after the answer is written: its buffers are garbage too
		timeout := scrapeTimeout(r, o.scrapeTimeout)
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			http.Error(w, "too many concurrent scrapes", http.StatusServiceUnavailable)
			return
		}
		answer := newAnswerBuffer()
		func() {
			defer func() { <-slots }()
			reg := prometheus.NewRegistry()
			reg.MustRegister(exp.Bind(ctx), goColl, procColl)
			withGzip(promhttp.HandlerFor(reg, handlerOpts)).ServeHTTP(answer, r)
		}()
		answer.send(w, time.Now().Add(writeTime(timeout)), logger)
	}))
	if o.metricsPath != "/" {
		mux.HandleFunc("/", landing(exp, o))
	}
	return mux
}

// writeTime bounds sending an answer that is ready: a client that reads
// slower loses its connection then. Prometheus gives up at its own scrape
// timeout anyway, so the scrape's timeout (plus a second) is as long as
// any scraper waits.
func writeTime(scrape time.Duration) time.Duration { return scrape + time.Second }

// Connection limits besides the write bound: a request's header and body
// must arrive within readTime (slowloris), and a kept-alive connection
// idle for idleTime is closed (Prometheus reuses its connection at every
// scrape interval, commonly 15 s to 1 min).
const (
	readTime = 10 * time.Second
	idleTime = 2 * time.Minute
)

// newServer builds the HTTP server. WriteTimeout is a backstop for every
// handler (the landing page too); /metrics sets its own, shorter, write
// deadline once its answer is ready.
func newServer(h http.Handler, o *options, base func(net.Listener) context.Context) *http.Server {
	return &http.Server{Handler: h, BaseContext: base,
		ReadHeaderTimeout: readTime, ReadTimeout: readTime,
		WriteTimeout: o.scrapeTimeout + writeTime(o.scrapeTimeout), IdleTimeout: idleTime}
}

// scrapeTimeout leaves Prometheus half a second to receive the answer.
func scrapeTimeout(r *http.Request, limit time.Duration) time.Duration {
	if v := r.Header.Get("X-Prometheus-Scrape-Timeout-Seconds"); v != "" {
		if s, err := strconv.ParseFloat(v, 64); err == nil && s > 0 {
			d := time.Duration(s*float64(time.Second)) - 500*time.Millisecond
			if d > 100*time.Millisecond && d < limit {
				return d
			}
		}
	}
	return limit
}

var landingTmpl = template.Must(template.New("landing").Parse(`<!doctype html>
<html><head><title>jobscope</title></head><body>
<h1>jobscope {{.Version}}</h1>
<p>Prometheus exporter for Slurm jobs and clusters ({{.Mode}} mode).</p>
<p><a href="{{.Path}}">Metrics</a></p>
<p>Collectors: {{range .Collectors}}<code>{{.}}</code> {{end}}</p>
{{with .Discovery}}<h2>Job discovery</h2>
<table>
<tr><td>cgroups</td><td>{{.Layout}}</td></tr>
<tr><td>Slurm scopes</td><td>{{range .Last.Scopes}}<code>{{.}}</code> {{else}}none yet (slurmstepd creates one with the first job){{end}}</td></tr>
<tr><td>job directories (last scrape)</td><td>{{range $s, $n := .Last.Dirs}}{{$s}}: {{$n}} {{end}}</td></tr>
<tr><td>skipped since start</td><td>{{range $r, $n := .Skipped}}{{if $n}}<b>{{$r}}: {{$n}}</b> {{end}}{{else}}none{{end}}</td></tr>
<tr><td>background squeue</td><td>{{with .Queue}}{{if .Enabled}}{{if eq .Up 1}}up, {{.Jobs}} jobs at {{.LastSuccess.Format "15:04:05"}}{{else if eq .Up 0}}<b>failing</b> ({{range $c, $n := .Errors}}{{$c}}: {{$n}} {{end}}), next try in {{.Backoff}}{{else}}not run yet{{end}}{{else}}off{{end}}{{end}}</td></tr>
</table>{{end}}
</body></html>
`))

func landing(exp *collector.Exporter, o *options) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		data := map[string]any{"Version": version, "Mode": o.mode, "Path": o.metricsPath, "Collectors": exp.Names()}
		if d := exp.Discovery(); d != nil {
			data["Discovery"] = d.Status()
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_ = landingTmpl.Execute(w, data)
	}
}
