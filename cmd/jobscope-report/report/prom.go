// SPDX-License-Identifier: Apache-2.0

package report

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	promconfig "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
)

// prom queries Prometheus with one timeout per request and turns the
// client's errors into sentences a user can act on.
type prom struct {
	api     v1.API
	url     string
	timeout time.Duration
}

// ErrPrometheus marks failures to get an answer from Prometheus.
var ErrPrometheus = errors.New("no answer from Prometheus")

// promError is a sentence for the user that still matches ErrPrometheus.
type promError struct {
	msg string
	err error
}

func (e *promError) Error() string        { return e.msg }
func (e *promError) Unwrap() error        { return e.err }
func (e *promError) Is(target error) bool { return target == ErrPrometheus }

func promErrorf(err error, format string, a ...any) error {
	return &promError{msg: fmt.Sprintf(format, a...), err: err}
}

func newProm(c PromConfig, rt http.RoundTripper) (*prom, error) {
	var err error
	if rt == nil {
		rt, err = promconfig.NewRoundTripperFromConfig(c.HTTP, "jobscope-report")
		if err != nil {
			return nil, fmt.Errorf("prometheus http_config: %w", err)
		}
	}
	cl, err := api.NewClient(api.Config{Address: c.URL, RoundTripper: noCache{next: rt}})
	if err != nil {
		return nil, err
	}
	return &prom{api: v1.NewAPI(cl), url: c.URL, timeout: time.Duration(c.Timeout)}, nil
}

// wrap names the failure of a request to endpoint (the API path) for what.
func (p *prom) wrap(err error, endpoint, what string) error {
	if err == nil {
		return nil
	}
	var ne net.Error
	var ae *v1.Error
	notProm := func(why string) error {
		return promErrorf(err, "%s is not a Prometheus server (%s); point --prometheus.url at Prometheus, not at the exporter",
			p.url, why)
	}
	switch {
	// The usual mistake is the exporter's own address (…:10817): it has no
	// API and answers 404, or its landing page.
	case errors.As(err, &ae) && ae.Type == v1.ErrClient && (strings.HasSuffix(ae.Msg, " 404") || strings.HasSuffix(ae.Msg, " 405")):
		return notProm("it answered " + ae.Msg[len(ae.Msg)-3:] + " to " + endpoint)
	case errors.As(err, &ae) && ae.Type == v1.ErrBadResponse && !strings.HasPrefix(ae.Msg, "bad response code") &&
		!strings.HasPrefix(ae.Msg, "inconsistent body"):
		return notProm("its answer to " + endpoint + " is not Prometheus API JSON")
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		return promErrorf(err, "Prometheus at %s did not answer within %s (%s); raise --prometheus.timeout if it is just slow",
			p.url, p.timeout, what)
	case errors.As(err, &ae) && ae.Type == v1.ErrClient && (strings.HasSuffix(ae.Msg, " 401") || strings.HasSuffix(ae.Msg, " 403")):
		return promErrorf(err, "Prometheus at %s refused the credentials (%s): check prometheus.http_config or "+
			"--prometheus.username/--prometheus.password-file", p.url, ae.Msg)
	case errors.As(err, &ae) && ae.Type != v1.ErrClient && ae.Type != v1.ErrServer:
		return promErrorf(err, "Prometheus at %s refused %s: %s %s", p.url, what, ae.Msg, ae.Detail)
	}
	return promErrorf(err, "cannot get an answer from Prometheus at %s (%s): %v", p.url, what, err)
}

func (p *prom) ctx(parent context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(parent, p.timeout)
}

// vector runs an instant query that must return a vector.
func (p *prom) vector(ctx context.Context, q string, at time.Time) (model.Vector, error) {
	return queryAs[model.Vector](ctx, p, q, at)
}

// matrix runs an instant query of a range selector: raw samples.
func (p *prom) matrix(ctx context.Context, q string, at time.Time) (model.Matrix, error) {
	return queryAs[model.Matrix](ctx, p, q, at)
}

func queryAs[T model.Value](ctx context.Context, p *prom, q string, at time.Time) (T, error) {
	var zero T
	v, err := p.query(ctx, q, at)
	if err != nil {
		return zero, err
	}
	out, ok := v.(T)
	if !ok {
		return zero, promErrorf(nil, "Prometheus at %s: query %s gave a %s, not a %s", p.url, q, v.Type(), zero.Type())
	}
	return out, nil
}

func (p *prom) query(ctx context.Context, q string, at time.Time) (model.Value, error) {
	ctx, cancel := p.ctx(ctx)
	defer cancel()
	v, _, _, err := p.api.Query(ctx, q, at, v1.WithTimeout(p.timeout))
	return v, p.wrap(err, "/api/v1/query", "query "+q)
}

func (p *prom) rangeQuery(ctx context.Context, q string, r v1.Range) (model.Matrix, error) {
	ctx, cancel := p.ctx(ctx)
	defer cancel()
	v, _, _, err := p.api.QueryRange(ctx, q, r, v1.WithTimeout(p.timeout))
	if err != nil {
		return nil, p.wrap(err, "/api/v1/query_range", "range query "+q)
	}
	m, ok := v.(model.Matrix)
	if !ok {
		return nil, promErrorf(nil, "Prometheus at %s: range query %s gave a %s, not a matrix", p.url, q, v.Type())
	}
	return m, nil
}

func (p *prom) series(ctx context.Context, match string, start, end time.Time) ([]model.LabelSet, error) {
	ctx, cancel := p.ctx(ctx)
	defer cancel()
	s, _, _, err := p.api.Series(ctx, []string{match}, start, end)
	return s, p.wrap(err, "/api/v1/series", "series "+match)
}

// ruleInterval returns the evaluation interval of a rule group, 0 when
// Prometheus does not list it.
func (p *prom) ruleInterval(ctx context.Context, group string) (time.Duration, error) {
	ctx, cancel := p.ctx(ctx)
	defer cancel()
	res, err := p.api.Rules(ctx, nil)
	if err != nil {
		return 0, p.wrap(err, "/api/v1/rules", "rules")
	}
	for _, g := range res.Groups {
		if g.Name == group && g.Interval > 0 {
			return time.Duration(g.Interval * float64(time.Second)), nil
		}
	}
	return 0, nil
}

// PromQL building blocks.

// sel renders a selector with exact matchers and one optional regex
// matcher (name=~re); values are quoted with Go's rules, which PromQL shares.
func sel(metric string, eq map[string]string, reName, re string) string {
	var b strings.Builder
	b.WriteString(metric)
	b.WriteByte('{')
	first := true
	add := func(s string) {
		if !first {
			b.WriteByte(',')
		}
		first = false
		b.WriteString(s)
	}
	for _, k := range slices.Sorted(maps.Keys(eq)) {
		add(k + "=" + strconv.Quote(eq[k]))
	}
	if reName != "" {
		add(reName + "=~" + strconv.Quote(re))
	}
	b.WriteByte('}')
	return b.String()
}

// promDur renders a duration as whole seconds, rounded up, at least 1s.
func promDur(d time.Duration) string {
	s := int64(math.Ceil(d.Seconds()))
	if s < 1 {
		s = 1
	}
	return strconv.FormatInt(s, 10) + "s"
}
