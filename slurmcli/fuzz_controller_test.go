// SPDX-License-Identifier: Apache-2.0

package slurmcli

import (
	"bytes"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// The parsers controller mode added for reservations, licenses, reasons,
// host lists and --collector.slurm_sacct.since, fuzzed from the real 22.05 (busy) and
// 24.11 captures.

// records counts the lines that start a record: every one must give one.
func records(b []byte, first string) int {
	n := 0
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), first+"=") {
			n++
		}
	}
	return n
}

func FuzzParseReservations(f *testing.F) {
	seed(f, "scontrol-show-res-busy.txt", "../24.11/scontrol-show-res-running.txt", "../24.11/scontrol-show-res-running.json")
	f.Fuzz(func(t *testing.T, b []byte) {
		ParseReservationsJSON(bytes.NewReader(b))
		rs, err := ParseReservationsText(bytes.NewReader(b), time.UTC)
		if err == nil && len(rs) != records(b, "ReservationName") {
			t.Fatalf("%d reservations from %d records", len(rs), records(b, "ReservationName"))
		}
	})
}

func FuzzParseLicenses(f *testing.F) {
	seed(f, "scontrol-show-lic-busy.txt", "../24.11/scontrol-show-lic-running.txt", "../24.11/scontrol-show-lic-running.json")
	f.Fuzz(func(t *testing.T, b []byte) {
		ParseLicensesJSON(bytes.NewReader(b))
		ls, err := ParseLicensesText(bytes.NewReader(b))
		if err == nil && len(ls) != records(b, "LicenseName") {
			t.Fatalf("%d licenses from %d records", len(ls), records(b, "LicenseName"))
		}
	})
}

func FuzzControllerStrings(f *testing.F) {
	f.Add("Nodes required for job are DOWN, DRAINED or reserved for jobs in higher priority partitions", "node[01-03,7],gpu1", "7 days ago", "e2e: disk\x1b[31m replaced")
	f.Add("ReqNodeNotAvail, UnavailableNodes:node2", "r[1-2]-n[1,3]", "2026-01-01T06:30:00", "")
	f.Fuzz(func(t *testing.T, reason, hosts, since, text string) {
		r := PendingReason(reason)
		if strings.ContainsAny(r, " ,:(") {
			t.Fatalf("PendingReason(%q) = %q: a description as a label", reason, r)
		}
		names, err := ExpandHostlist(hosts, 1000)
		if err == nil && len(names) > 1000 {
			t.Fatalf("%q expanded past the limit: %d", hosts, len(names))
		}
		ParseSince(since, time.Unix(1795563535, 0), time.UTC)
		b := BoundedText(text, 80)
		if len(b) > 80 || !utf8.ValidString(b) {
			t.Fatalf("BoundedText(%q) = %q", text, b)
		}
	})
}
