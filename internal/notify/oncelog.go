// SPDX-License-Identifier: Apache-2.0

package notify

import (
	"log/slog"
	"sync"
)

// onceLog counts every error by cause and logs a cause's first occurrence
// as a warning, later ones at debug: a relay down for an hour is one line,
// not thousands. The webhook's goroutines and the engine share it.
type onceLog struct {
	log *slog.Logger
	m   *metrics
	mu  sync.Mutex
	saw map[string]bool
}

func newOnceLog(log *slog.Logger, m *metrics) *onceLog {
	return &onceLog{log: log, m: m, saw: map[string]bool{}}
}

func (o *onceLog) report(cause, msg string, args ...any) {
	o.m.errors.WithLabelValues(cause).Inc()
	o.mu.Lock()
	first := !o.saw[cause]
	o.saw[cause] = true
	o.mu.Unlock()
	if !first {
		o.log.Debug(msg, args...)
		return
	}
	o.log.Warn(msg+" (logged once per cause; jobscope_notify_errors_total counts them)", append(args, "cause", cause)...)
}
