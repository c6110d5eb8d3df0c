// SPDX-License-Identifier: Apache-2.0

package notify

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// inboxSize bounds the webhook calls waiting for the engine; a full inbox
// answers 503, and Alertmanager retries.
const inboxSize = 256

// handler serves POST /alertmanager and GET /metrics.
type handler struct {
	token [sha256.Size]byte
	m     *metrics
	inbox chan<- []Alert
	once  func(cause, msg string, args ...any)
}

func newMux(h *handler) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("/alertmanager", h)
	mux.Handle("/metrics", promhttp.HandlerFor(h.m.reg, promhttp.HandlerOpts{}))
	return mux
}

// authorized compares the Bearer token in constant time (over hashes, so
// not even the token's length leaks).
func (h *handler) authorized(r *http.Request) bool {
	auth := r.Header.Get("Authorization")
	tok, ok := strings.CutPrefix(auth, "Bearer ")
	if !ok || tok == "" {
		return false
	}
	got := sha256.Sum256([]byte(tok))
	return subtle.ConstantTimeCompare(got[:], h.token[:]) == 1
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	if !h.authorized(r) {
		h.once(causeUnauthorized, "webhook call without the right Bearer token", "remote", r.RemoteAddr)
		w.Header().Set("WWW-Authenticate", `Bearer realm="jobscope notify"`)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	body := http.MaxBytesReader(w, r.Body, maxBody)
	alerts, bad, err := decodePayload(body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			h.once(causeBadRequest, "webhook body over the limit", "remote", r.RemoteAddr, "limit", maxBody)
			http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
			return
		}
		h.once(causeBadRequest, "webhook body refused", "remote", r.RemoteAddr, "err", err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	for _, e := range bad {
		h.once(causeBadAlert, "alert skipped: it lacks what notify needs", "err", e)
	}
	if len(alerts) == 0 {
		w.WriteHeader(http.StatusOK)
		return
	}
	select {
	case h.inbox <- alerts:
		w.WriteHeader(http.StatusOK)
	default:
		h.once(causeQueueFull, "webhook inbox full; Alertmanager will retry", "alerts", len(alerts))
		http.Error(w, "busy", http.StatusServiceUnavailable)
	}
}
