// SPDX-License-Identifier: Apache-2.0

package service

import (
	"context"
	"errors"
	"os/user"
	"testing"
	"time"

	"github.com/jobscope/jobscope/slurmcli"
	"github.com/jobscope/jobscope/slurmcli/slurmclitest"
)

// fakeSlurm makes sacct answer job 100 (alice, physics), 200 (bob,
// chemistry), 300 (a reused id: alice's and bob's, both physics), and
// nothing else; sacctmgr answers the roles of carol (coordinator of
// physics), op (Operator) and adm (Administrator).
func fakeSlurm(t *testing.T) *slurmclitest.Bin {
	b := slurmclitest.New(t)
	hdr := "JobIDRaw|User|Account|Partition|Cluster|State|ExitCode|Submit|Start|End|ElapsedRaw|TimelimitRaw|" +
		"AllocCPUS|AllocTRES|NNodes|NodeList|TotalCPU|CPUTimeRAW|JobName"
	line := func(id, u, a string, submit ...string) string {
		sub := "2026-11-27T10:00:00"
		if len(submit) > 0 {
			sub = submit[0]
		}
		return id + "|" + u + "|" + a + "|debug|c|COMPLETED|0:0|" + sub + "|2026-11-27T10:00:01|" +
			"2026-11-27T10:10:01|600|60|2|cpu=2|1|vm|00:05:00|1200|name"
	}
	b.Script("sacct", slurmclitest.FindSep+`
J=''; U=''; prev=''; for a in "$@"; do [ "$prev" = -j ] && J=$a; [ "$prev" = -u ] && U=$a; prev=$a; done
{ echo '`+hdr+`'
case "$J$U" in
100|alice) echo '`+line("100", "alice", "physics")+`';;
200) echo '`+line("200", "bob", "chemistry")+`';;
300) echo '`+line("300", "alice", "physics")+`'; echo '`+line("300", "bob", "physics", "2026-11-20T10:00:00")+`';;
500) echo '`+line("500", "alice", "physics")+`'; echo '`+line("500", "alice", "physics")+`';;
400) echo '`+line("400", "bob", "physics")+`';;
esac; } | `+slurmclitest.ToSep(19))
	b.Script("sacctmgr", `for a in "$@"; do case "$a" in
name=carol) echo 'carol|None|physics';; name=op) echo 'op|Operator|';; name=adm) echo 'adm|Administrator|';;
name=alice) echo 'alice|None|';; name=bob) echo 'bob|None|';; esac; done`)
	return b
}

func names(uid string) (*user.User, error) {
	n, ok := map[string]string{"0": "root", "1001": "alice", "1002": "bob", "1003": "carol", "1004": "op",
		"1005": "adm"}[uid]
	if !ok {
		return nil, user.UnknownUserIdError(0)
	}
	return &user.User{Username: n, Uid: uid}, nil
}

// TestMayReadJob is the access table of docs/report.md for job reports.
func TestMayReadJob(t *testing.T) {
	b := fakeSlurm(t)
	a := &Access{Slurm: &slurmcli.Runner{BinDir: b.Dir}, TTL: time.Minute, LookupID: names}
	ctx := context.Background()
	for _, c := range []struct {
		uid    int
		job    string
		reason string // "" allowed
		owner  bool
	}{
		{1001, "100", "", true},               // the owner
		{1002, "100", reasonForbidden, false}, // another user
		{1003, "100", "", false},              // coordinator of physics
		{1003, "200", reasonForbidden, false}, // not of chemistry
		{1004, "200", "", false},              // operator
		{1005, "200", "", false},              // administrator
		{0, "200", "", false},                 // root
		{1001, "300", reasonForbidden, false}, // a reused id: bob's job too
		{1003, "300", "", false},              // both in physics
		{1001, "999", reasonUnknownJob, false},
		{1001, "500", reasonSlurm, false},     // a job printed twice: sacct's answer is not believed
		{4242, "100", reasonForbidden, false}, // a uid without a name
		{1001, "1;rm", reasonBadRequest, false},
	} {
		caller, err := a.CallerByUID(ctx, c.uid)
		if err != nil {
			t.Fatal(err)
		}
		acc, err := a.MayReadJob(ctx, caller, c.job)
		owner := acc.Owner
		// An allowed caller who is not root or privileged gets the
		// report pinned to sacct's cluster ("c" in fakeSlurm).
		if err == nil && !caller.all() && acc.Cluster != "c" {
			t.Errorf("uid %d job %s: cluster %q, want sacct's \"c\"", c.uid, c.job, acc.Cluster)
		}
		got := ""
		var rf *Refusal
		if errors.As(err, &rf) {
			got = rf.Reason
		} else if err != nil {
			got = err.Error()
		}
		if got != c.reason || owner != c.owner {
			t.Errorf("uid %d job %s: reason %q owner %v, want %q %v (%v)", c.uid, c.job, got, owner, c.reason, c.owner, err)
		}
	}
}

// TestMayReadUsage: self, the coordinated account, everything for
// operators and root.
func TestMayReadUsage(t *testing.T) {
	b := fakeSlurm(t)
	a := &Access{Slurm: &slurmcli.Runner{BinDir: b.Dir}, TTL: time.Minute, LookupID: names}
	ctx := context.Background()
	for _, c := range []struct {
		uid              int
		user, acct, part string
		allowed          bool
	}{
		{1001, "alice", "", "", true},
		{1001, "bob", "", "", false},
		{1001, "", "physics", "", false},
		{1001, "", "", "debug", false},
		{1003, "", "physics", "", true},
		{1003, "bob", "physics", "", true},
		{1003, "", "chemistry", "", false},
		{1003, "bob", "", "", false},
		{1004, "bob", "", "", true},
		{0, "", "", "debug", true},
	} {
		caller, err := a.CallerByUID(ctx, c.uid)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.MayReadUsage(caller, c.user, c.acct, c.part); (err == nil) != c.allowed {
			t.Errorf("uid %d %q %q %q: %v, want allowed %v", c.uid, c.user, c.acct, c.part, err, c.allowed)
		}
	}
}

// TestAccessFailsClosed: a Slurm that does not answer refuses the request
// (503), and the failure is not cached.
func TestAccessFailsClosed(t *testing.T) {
	b := fakeSlurm(t)
	b.Script("sacctmgr", "exit 1")
	a := &Access{Slurm: &slurmcli.Runner{BinDir: b.Dir}, TTL: time.Minute, LookupID: names}
	var rf *Refusal
	if _, err := a.CallerByUID(context.Background(), 1003); !errors.As(err, &rf) || rf.Status != 503 {
		t.Fatalf("%v, want a 503 refusal", err)
	}
	b2 := fakeSlurm(t)
	a.Slurm.BinDir = b2.Dir
	c, err := a.CallerByUID(context.Background(), 1003)
	if err != nil || !c.Coordinates["physics"] {
		t.Fatalf("after Slurm came back: %+v %v", c, err)
	}
}
