// SPDX-License-Identifier: Apache-2.0

package slurmcli

import "strings"

// JSON output carries a pending job's reason as Slurm's reason code
// ("Resources") and any longer text apart (state_description). squeue's
// text field %r (and -O Reason) prints that longer text instead of the code
// whenever slurmctld set one, so the text form needs the code recovered:
// the label must be the same whatever the format, and bounded.

// reasonPrefixes are descriptions slurmctld writes (src/slurmctld, 22.05 to
// 26.05) with the reason code each goes with. The text is matched at its
// start: several end with node, partition or reservation names.
var reasonPrefixes = []struct{ prefix, code string }{
	{"Nodes required for job are DOWN, DRAINED", "Resources"},
	{"job requeued in held state", "JobHeldUser"},
	{"uid ", "InvalidAccount"}, // "uid N not in group permitted to use this partition ..."
}

// reasonSuffixes are descriptions recognised by their end.
var reasonSuffixes = []struct{ suffix, code string }{
	{" was deleted", "ReservationDeleted"}, // "Reservation X was deleted"
	{" is invalid", "ReservationInvalid"},  // "Reservation X is invalid"
}

// ReasonUnrecognized stands for a description jobscope does not know: the
// description itself is never a label value, since it may name nodes or
// users and has no bound.
const ReasonUnrecognized = "Unrecognized"

// PendingReason turns what squeue printed as a job's reason into Slurm's
// reason code: a code stays as it is ("Priority", "QOSMaxCpuPerUserLimit");
// "ReqNodeNotAvail, UnavailableNodes:n1" gives its leading code; known
// descriptions give the code slurmctld set with them; any other text gives
// ReasonUnrecognized.
func PendingReason(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	if isReasonCode(s) {
		return s
	}
	if i := strings.IndexAny(s, ",:("); i > 0 && isReasonCode(s[:i]) {
		return s[:i]
	}
	for _, p := range reasonPrefixes {
		if strings.HasPrefix(s, p.prefix) {
			return p.code
		}
	}
	if strings.HasPrefix(s, "Reservation ") {
		for _, p := range reasonSuffixes {
			if strings.HasSuffix(s, p.suffix) {
				return p.code
			}
		}
	}
	return ReasonUnrecognized
}

// isReasonCode tells a reason code (one word of letters and digits, as
// every entry of Slurm's reason table is) from a description.
func isReasonCode(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// BoundedText makes free text (a node's drain reason, a reservation's user
// list) fit for a label value: control characters dropped, runs of spaces
// folded, invalid UTF-8 replaced, and cut to limit bytes on a character
// boundary, with "…" marking the cut.
func BoundedText(s string, limit int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	space := false
	for _, r := range s {
		switch {
		case r == ' ' || r == '\t' || r == '\n' || r == '\r':
			space = b.Len() > 0
			continue
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	out := b.String()
	if len(out) <= limit {
		return out
	}
	const ellipsis = "…"
	cut := limit - len(ellipsis)
	for cut > 0 && !utf8Start(out[cut]) {
		cut--
	}
	return strings.TrimRight(out[:cut], " ") + ellipsis
}

func utf8Start(c byte) bool { return c&0xC0 != 0x80 }
