// SPDX-License-Identifier: Apache-2.0

package notify

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// Bounds on the state: a flood of alerts fills these, is counted
// (cause queue_full) and refused, rather than growing without end.
const (
	maxOutbox      = 10000
	maxPending     = 10000
	maxJobs        = 100000
	maxDigestItems = 200
)

// state is everything that must survive a restart: which user was told
// about which alert when (the ledger), what is still to be sent or looked
// up (the retry queues), the open digests, and per job and alert when it
// was first seen and warned about (for actions).
type state struct {
	Ledger  map[string]time.Time `json:"ledger"` // ledgerKey(user, alert) -> last message
	Outbox  []*outgoing          `json:"outbox"`
	Pending []*pendingAlert      `json:"pending"`
	Digests map[string]*digest   `json:"digests"` // by user
	Jobs    map[string]*jobAlert `json:"jobs"`    // jobAlertKey(key, alert)
}

type outgoing struct {
	To       []string  `json:"to"`
	Subject  string    `json:"subject"`
	Text     string    `json:"text"`
	HTML     string    `json:"html,omitempty"`
	What     string    `json:"what"` // for logs: "digest for alice", "cancel of 123"
	Attempts int       `json:"attempts"`
	Next     time.Time `json:"next"`
}

type pendingAlert struct {
	Alert    Alert     `json:"alert"`
	Attempts int       `json:"attempts"`
	Next     time.Time `json:"next"`
}

type digest struct {
	User  string    `json:"user"`
	Due   time.Time `json:"due"`
	Items []item    `json:"items"`
	More  int       `json:"more"` // items over maxDigestItems, named as a count
}

// item is one alert on one job in a digest, with what Slurm said of the job.
type item struct {
	Alert   Alert  `json:"alert"`
	JobName string `json:"job_name"`
	Address string `json:"address"`
}

type jobAlert struct {
	FirstSeen time.Time `json:"first_seen"`
	LastSeen  time.Time `json:"last_seen"`
	WarnedAt  time.Time `json:"warned_at"` // zero until the owner was told (or chose not to be)
	Acted     bool      `json:"acted"`
	User      string    `json:"user"`
	UID       int       `json:"uid"`
	Start     int64     `json:"start"`
}

func ledgerKey(user, alert string) string  { return user + "\x00" + alert }
func jobAlertKey(key, alert string) string { return key + "\x00" + alert }

func newState() *state {
	return &state{Ledger: map[string]time.Time{}, Digests: map[string]*digest{}, Jobs: map[string]*jobAlert{}}
}

const stateFile = "state.json"

// loadState reads dir's state. A missing file is a first start; a file
// that does not parse is kept aside (for the admin to read) and an empty
// state begins, so a torn disk never keeps the receiver down.
func loadState(dir string) (*state, error) {
	p := filepath.Join(dir, stateFile)
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return newState(), nil
	}
	if err != nil {
		return newState(), err
	}
	st := newState()
	if err := json.Unmarshal(b, st); err != nil {
		aside := p + ".corrupt"
		_ = os.Rename(p, aside)
		return newState(), fmt.Errorf("%s does not parse (kept as %s): %w", p, aside, err)
	}
	if st.Ledger == nil {
		st.Ledger = map[string]time.Time{}
	}
	if st.Digests == nil {
		st.Digests = map[string]*digest{}
	}
	if st.Jobs == nil {
		st.Jobs = map[string]*jobAlert{}
	}
	return st, nil
}

// save writes the state whole, through a temporary file renamed into
// place, so a crash leaves the old or the new state, never half of one.
func (st *state) save(dir string) error {
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".state-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a successful rename, a no-op
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(dir, stateFile))
}

// prune forgets ledger entries older than period and jobs not alerted on
// for a while (ended jobs: Alertmanager sends resolved, but a restart may
// have missed it).
func (st *state) prune(now time.Time, period time.Duration) {
	for k, t := range st.Ledger {
		if now.Sub(t) >= period {
			delete(st.Ledger, k)
		}
	}
	keep := 2 * max(period, 24*time.Hour)
	for k, j := range st.Jobs {
		if now.Sub(j.LastSeen) > keep {
			delete(st.Jobs, k)
		}
	}
}

// backoff is the wait before try attempts+1: initial doubled per failure,
// capped at maxWait.
func backoff(attempts int, initial, maxWait time.Duration) time.Duration {
	d := initial
	for i := 1; i < attempts && d < maxWait; i++ {
		d *= 2
	}
	return min(d, maxWait)
}
