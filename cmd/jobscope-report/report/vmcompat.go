// SPDX-License-Identifier: Apache-2.0

package report

import (
	"net/http"
	"strings"
)

// noCache adds nocache=1 to every query the report sends. VictoriaMetrics
// (-search.latencyOffset, 30 s by default) evaluates an instant query
// asked for the last 30 s at now-30s unless nocache=1 is given, so a
// report read right after a job ended would miss its last samples and
// the usage summary the latest rule evaluations. Prometheus ignores the
// parameter; VictoriaMetrics then also skips its rollup result cache,
// which a report's few dozen one-off queries would not reuse anyway.
type noCache struct{ next http.RoundTripper }

func (n noCache) RoundTrip(req *http.Request) (*http.Response, error) {
	if !strings.HasSuffix(req.URL.Path, "/api/v1/query") && !strings.HasSuffix(req.URL.Path, "/api/v1/query_range") {
		return n.next.RoundTrip(req)
	}
	// A RoundTripper must not change the request it was given.
	req = req.Clone(req.Context())
	q := req.URL.Query()
	q.Set("nocache", "1")
	req.URL.RawQuery = q.Encode()
	return n.next.RoundTrip(req)
}
