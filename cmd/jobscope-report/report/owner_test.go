// SPDX-License-Identifier: Apache-2.0

package report

import (
	"strings"
	"testing"

	"github.com/jobscope/jobscope/slurmcli"
	"github.com/jobscope/jobscope/slurmcli/slurmclitest"
)

// TestOwnerFromSacct: where sacct answers, the report names Slurm's owner
// and account, not the metrics' labels (which the job's environment may
// have written), and keeps the executables from a caller the label alone
// would have made the owner.
func TestOwnerFromSacct(t *testing.T) {
	rp := loadReplay(t)
	srv := rp.server(t)
	saved := sacctLines["4242"]
	t.Cleanup(func() { sacctLines["4242"] = saved })
	sacctLines["4242"] = []string{strings.Replace(saved[0], "|train|alice|physics|", "|train|mallory|chemistry|", 1)}
	o := scenarioOptions(t, nil)
	b := slurmclitest.New(t)
	b.Script("sacct", fakeSacctScript())
	o.Slurm = &slurmcli.Runner{BinDir: b.Dir}
	stdout, stderr, code := runFixture(t, srv.URL, o, fixtureRun{args: []string{"4242"}})
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "Owner     user mallory; account chemistry;") {
		t.Errorf("owner is not sacct's:\n%s", stdout)
	}
	if !strings.Contains(stdout, "user label (alice) disagrees") {
		t.Errorf("no note on the label:\n%s", stdout)
	}
	if strings.Contains(stdout, "/home/alice/venv/bin/python3.11") {
		t.Errorf("alice sees the executables of mallory's job:\n%s", stdout)
	}
}
