// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"log/slog"
	"net/http"
	"strconv"
	"time"
)

// answerBuffer holds a /metrics answer (compressed when the client asked)
// while the scrape holds its slot; send writes it out after the slot is
// released, under a write deadline. A node's answer is a few MB at most
// (gzip makes it a tenth), held for at most the write time.
type answerBuffer struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func newAnswerBuffer() *answerBuffer { return &answerBuffer{header: http.Header{}} }

func (a *answerBuffer) Header() http.Header { return a.header }

func (a *answerBuffer) WriteHeader(code int) {
	if a.status == 0 {
		a.status = code
	}
}

func (a *answerBuffer) Write(p []byte) (int, error) {
	a.WriteHeader(http.StatusOK)
	return a.body.Write(p)
}

// send writes the answer to w, which must take it before deadline; a
// client that reads slower loses its connection there.
func (a *answerBuffer) send(w http.ResponseWriter, deadline time.Time, logger *slog.Logger) {
	if err := http.NewResponseController(w).SetWriteDeadline(deadline); err != nil {
		// Only a ResponseWriter without a connection (tests) gets here;
		// the server's WriteTimeout still bounds the write.
		logger.Debug("no write deadline for the answer", "err", err)
	}
	h := w.Header()
	for k, v := range a.header {
		h[k] = v
	}
	h.Set("Content-Length", strconv.Itoa(a.body.Len()))
	w.WriteHeader(max(a.status, http.StatusOK))
	_, _ = w.Write(a.body.Bytes())
}
