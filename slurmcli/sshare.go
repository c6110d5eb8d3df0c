// SPDX-License-Identifier: Apache-2.0

package slurmcli

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Share is one association of `sshare -a -P -l`: an account (User empty)
// or a user within an account. Values sshare leaves empty are NaN.
type Share struct {
	Account string
	User    string
	Depth   int // 0 for root; sshare indents children by one space per level

	RawShares      float64
	NormShares     float64
	RawUsage       float64
	EffectiveUsage float64
	FairShare      float64
	LevelFS        float64
}

// SshareArgs are the arguments; the header is kept so that columns are
// found by name, whatever the version adds or reorders.
var SshareArgs = []string{"-a", "-P", "-l"}

// ParseSshare reads `sshare -a -P -l` output (with its header line).
func ParseSshare(r io.Reader) ([]Share, error) {
	rows, err := pipeTable(r, "sshare", "Account", "User")
	if err != nil {
		return nil, err
	}
	var out []Share
	for _, row := range rows {
		get := row.get
		acct := get("Account") // its leading spaces are the depth
		s := Share{
			Account: strings.TrimLeft(acct, " "),
			User:    strings.TrimSpace(get("User")),
			Depth:   len(acct) - len(strings.TrimLeft(acct, " ")),

			RawShares:      shareNum(get("RawShares")),
			NormShares:     shareNum(get("NormShares")),
			RawUsage:       shareNum(get("RawUsage")),
			EffectiveUsage: shareNum(get("EffectvUsage")),
			FairShare:      shareNum(get("FairShare")),
			LevelFS:        shareNum(get("LevelFS")),
		}
		if s.Account == "" {
			return nil, fmt.Errorf("sshare line %d: empty account", row.line)
		}
		out = append(out, s)
	}
	return out, nil
}

// shareNum reads a number; empty, "parent" and junk are NaN, "inf" is +Inf
// (LevelFS of an association with no usage).
func shareNum(s string) float64 {
	s = strings.TrimSpace(s)
	if s == "" {
		return math.NaN()
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return math.NaN()
	}
	return v
}
