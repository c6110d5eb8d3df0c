// SPDX-License-Identifier: Apache-2.0

package clustergen

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/jobscope/jobscope/slurmcli"
)

// The simulated outputs parse as the real ones do, in every form, and the
// fake commands print what controller mode asks for.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	s := Shape{Nodes: 40, Jobs: 1000, Partitions: 4, Users: 10, Accounts: 3}
	if err := Write(dir, filepath.Join("..", "..", "..", "testdata", "slurm", "22.05"), s); err != nil {
		t.Fatal(err)
	}
	run := func(name string, args ...string) []byte {
		t.Helper()
		out, err := exec.Command(filepath.Join(dir, "bin", name), args...).Output()
		if err != nil {
			t.Fatalf("%s %v: %v", name, args, err)
		}
		return out
	}
	js, err := slurmcli.ParseSqueueJSON(bytes.NewReader(run("squeue", slurmcli.SqueueJSONArgs...)))
	if err != nil || len(js) != s.Jobs {
		t.Fatalf("json: %d jobs, %v", len(js), err)
	}
	sep := slurmcli.NewSeparator()
	text, ref, err := slurmcli.ParseSqueueTextIn(bytes.NewReader(run("squeue", slurmcli.SqueueTextArgs(sep)...)), time.UTC, sep)
	if err != nil || ref.Records != 0 {
		t.Fatal(err, ref)
	}
	queued, tasks := 0, 0
	for _, j := range js {
		if j.InQueue() {
			queued++
			tasks += j.Count
		}
	}
	if len(text) != queued || queued != s.Jobs*95/100 || tasks <= queued {
		t.Errorf("text %d records, json %d queued (%d tasks)", len(text), queued, tasks)
	}
	nodes, err := slurmcli.ParseSinfoJSON(bytes.NewReader(run("sinfo", slurmcli.SinfoJSONArgs...)))
	if err != nil || len(nodes) != s.Nodes {
		t.Fatalf("sinfo: %d nodes, %v", len(nodes), err)
	}
	tn, err := slurmcli.ParseScontrolNodes(bytes.NewReader(run("scontrol", slurmcli.ScontrolNodeArgs...)))
	if err != nil || len(tn) != s.Nodes || tn[0].State != nodes[0].State || tn[0].AllocCPUs != nodes[0].AllocCPUs {
		t.Fatalf("scontrol: %d nodes, %v", len(tn), err)
	}
	if _, err := exec.Command(filepath.Join(dir, "bin", "scontrol"), slurmcli.ReservationJSONArgs...).Output(); err == nil {
		t.Error("scontrol --json answered: 22.05 refuses it")
	}
	if r, err := slurmcli.ParseReservationsText(bytes.NewReader(run("scontrol", slurmcli.ReservationTextArgs...)), time.UTC); err != nil || len(r) != 1 {
		t.Errorf("reservations %v, %v", r, err)
	}
	if l, err := slurmcli.ParseLicensesText(bytes.NewReader(run("scontrol", slurmcli.LicenseTextArgs...))); err != nil || len(l) != 1 {
		t.Errorf("licenses %v, %v", l, err)
	}
}
