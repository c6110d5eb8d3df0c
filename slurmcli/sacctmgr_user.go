// SPDX-License-Identifier: Apache-2.0

package slurmcli

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"time"
)

// SlurmUser is what slurmdbd says of a user's rights: its admin level and
// the accounts it coordinates. Both are set by Slurm administrators.
type SlurmUser struct {
	Name        string
	AdminLevel  string   // None, Operator, Administrator
	Coordinates []string // accounts
}

// Privileged reports whether Slurm lets the user see every job (operators
// and administrators).
func (u SlurmUser) Privileged() bool {
	l := strings.ToLower(u.AdminLevel)
	return strings.HasPrefix(l, "admin") || strings.HasPrefix(l, "operator")
}

// ValidUserName tells a name that can be passed to sacct and sacctmgr as
// one user: what useradd accepts, without the characters their
// command lines read as lists or assignments.
func ValidUserName(s string) bool {
	if s == "" || len(s) > 64 || s[0] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// SacctmgrUserArgs asks for one user's admin level and coordinated
// accounts (sacctmgr(1): "WithCoord: Display all accounts a user is
// coordinator for").
func SacctmgrUserArgs(name string) []string {
	return []string{"-n", "-P", "show", "user", "name=" + name, "withcoord", "format=User,AdminLevel,Coordinators"}
}

// LookupSlurmUser runs sacctmgr for one user. A user slurmdbd does not
// know has no rights (ok false), which is no error.
func LookupSlurmUser(ctx context.Context, r *Runner, name string) (u SlurmUser, ok bool, err error) {
	if !ValidUserName(name) {
		return SlurmUser{}, false, fmt.Errorf("sacctmgr: refusing user name %q", name)
	}
	out, err := r.Run(ctx, "sacctmgr", SacctmgrUserArgs(name)...)
	if err != nil {
		return SlurmUser{}, false, err
	}
	u, ok, err = ParseSacctmgrUser(bytes.NewReader(out), name)
	if err != nil {
		r.Stats().ParseError("sacctmgr")
	}
	return u, ok, err
}

// ParseSacctmgrUser reads `sacctmgr -n -P show user withcoord
// format=User,AdminLevel,Coordinators`: one line per user, the accounts
// comma-separated. Only the line of name counts.
func ParseSacctmgrUser(r io.Reader, name string) (SlurmUser, bool, error) {
	sc := bufio.NewScanner(r)
	var (
		u     SlurmUser
		found bool
	)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if l == "" {
			continue
		}
		f := strings.Split(l, "|")
		if len(f) != 3 {
			return SlurmUser{}, false, fmt.Errorf("sacctmgr: %d fields, want 3", len(f))
		}
		if f[0] != name {
			continue
		}
		if found {
			return SlurmUser{}, false, fmt.Errorf("sacctmgr: user %q printed twice", name)
		}
		found = true
		u = SlurmUser{Name: f[0], AdminLevel: f[1]}
		for _, a := range strings.Split(f[2], ",") {
			if a = strings.TrimSpace(a); a != "" {
				u.Coordinates = append(u.Coordinates, a)
			}
		}
	}
	return u, found, sc.Err()
}

// SacctUserArgs asks for a user's jobs since a time, in SacctRecordFormat
// (steps too: their sum is the allocation line's TotalCPU).
func SacctUserArgs(user, cluster, sep string, since time.Time) []string {
	args := []string{"-P", "--delimiter=" + sep, "-u", user, "-S", since.Format("2006-01-02T15:04:05"),
		"--format=" + SacctRecordFormat}
	if cluster != "" {
		args = append(args, "-M", cluster)
	}
	return args
}

// SacctUserRecords runs sacct for a user's recent jobs (the report
// service's job list). A *RefusedError (Partial) comes with good records.
func SacctUserRecords(ctx context.Context, r *Runner, user, cluster string, since time.Time, loc *time.Location) ([]SacctRecord, error) {
	if !ValidUserName(user) {
		return nil, fmt.Errorf("sacct: refusing user name %q", user)
	}
	if strings.ContainsAny(cluster, ", \t\n") {
		return nil, fmt.Errorf("sacct: refusing cluster %q", cluster)
	}
	sep := NewSeparator()
	out, err := r.Run(ctx, "sacct", SacctUserArgs(user, cluster, sep, since.In(locOrLocal(loc)))...)
	if err != nil {
		return nil, err
	}
	recs, ref, err := ParseSacctRecords(bytes.NewReader(out), loc, sep)
	if err != nil {
		r.Stats().ParseError("sacct")
		return nil, err
	}
	return recs, r.refused("sacct", ref)
}

func locOrLocal(l *time.Location) *time.Location {
	if l == nil {
		return time.Local
	}
	return l
}
