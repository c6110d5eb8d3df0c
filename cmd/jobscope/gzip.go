// SPDX-License-Identifier: Apache-2.0

package main

import (
	"compress/gzip"
	"net/http"
	"strings"
	"sync"
)

// Scrapes of a busy node are 0.5-2 MB of text. gzip's default level costs
// a third of the scrape's time for a few per cent of size over BestSpeed,
// so jobscope compresses itself at BestSpeed (promhttp offers no level).
var gzipWriters = sync.Pool{New: func() any {
	w, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed)
	return w
}}

type gzipResponse struct {
	http.ResponseWriter
	gz *gzip.Writer
}

func (g gzipResponse) Write(b []byte) (int, error) { return g.gz.Write(b) }

// withGzip compresses responses for clients that accept gzip.
func withGzip(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !acceptsGzip(r.Header.Get("Accept-Encoding")) {
			h.ServeHTTP(w, r)
			return
		}
		gz := gzipWriters.Get().(*gzip.Writer)
		defer gzipWriters.Put(gz)
		gz.Reset(w)
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Add("Vary", "Accept-Encoding")
		h.ServeHTTP(gzipResponse{ResponseWriter: w, gz: gz}, r)
		_ = gz.Close()
	})
}

func acceptsGzip(header string) bool {
	for _, part := range strings.Split(header, ",") {
		enc, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(enc), "gzip") && !strings.Contains(strings.ReplaceAll(params, " ", ""), "q=0") {
			return true
		}
	}
	return false
}
