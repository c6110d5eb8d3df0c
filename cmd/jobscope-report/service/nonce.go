// SPDX-License-Identifier: Apache-2.0

package service

import (
	"sync"
	"time"

	"github.com/jobscope/jobscope/internal/mungeauth"
)

// maxNonces bounds the nonces remembered: far more requests than
// max_concurrent reports can answer in mungeauth.NonceWindow.
const maxNonces = 100000

// nonces remembers the nonces of accepted credentials for the window in
// which their payload time still passes. munged's own replay check covers
// one credential, decoded by that munged, while it runs; two credentials
// minted with one payload, a munged restarted, or two services behind one
// name each pass it, so the service checks the nonce itself.
type nonces struct {
	mu   sync.Mutex
	seen map[string]time.Time // nonce -> when it may be forgotten
}

// fresh records nonce and says whether it was new. full says the store is
// full of live nonces: the caller is refused rather than the bound grown.
func (n *nonces) fresh(nonce string, now time.Time) (ok, full bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.seen == nil {
		n.seen = make(map[string]time.Time)
	}
	if until, dup := n.seen[nonce]; dup && now.Before(until) {
		return false, false
	}
	if len(n.seen) >= maxNonces {
		for k, until := range n.seen {
			if !now.Before(until) {
				delete(n.seen, k)
			}
		}
		if len(n.seen) >= maxNonces {
			return false, true
		}
	}
	n.seen[nonce] = now.Add(mungeauth.NonceWindow)
	return true, false
}
