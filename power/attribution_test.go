// SPDX-License-Identifier: Apache-2.0

package power

import (
	"math/rand/v2"
	"testing"
	"time"
)

// Three CPU jobs with known shares over a known energy delta, plus a GPU
// job; exact values (the numbers are chosen to be exact in binary).
func TestLedgerExact(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	for _, c := range []struct {
		policy          Policy
		cpu, dram, node [4]float64
		unattributedCPU float64
	}{
		// capacity: 80 CPU-s offered; A 32, B 16, C 16 -> 0.4, 0.2, 0.2;
		// memory 4, 2, 2 GiB of 16 GiB -> 0.25, 0.125, 0.125 of 100 J DRAM
		{PolicyCapacity, [4]float64{400, 200, 200, 0}, [4]float64{25, 12.5, 12.5, 0}, [4]float64{660, 330, 330, 0}, 200},
		// jobs: 64 CPU-s used -> 0.5, 0.25, 0.25; 8 GiB used -> 0.5, 0.25,
		// 0.25; all energy goes to the jobs
		{PolicyJobs, [4]float64{500, 250, 250, 0}, [4]float64{50, 25, 25, 0}, [4]float64{825, 412.5, 412.5, 0}, 0},
	} {
		l := NewLedger(c.policy)
		gib := float64(1 << 30)
		s1 := Sample{
			At: t0, CPUs: 8, Memory: 16 * gib,
			CPUJoules: 5000, DRAMJoules: 700, HasCPU: true, HasDRAM: true,
			NodeWatts: 200, HasNode: true,
			HasGPU: true, GPUs: []GPUDevice{{ID: "g0", JobID: "104", Joules: 1000}, {ID: "g1", Joules: 10}},
			Factor: 56, HasFactor: true,
			Jobs: []JobSample{
				{ID: "101", CPUSeconds: 1, MemoryBytes: 4 * gib},
				{ID: "102", CPUSeconds: 2, MemoryBytes: 2 * gib},
				{ID: "103", CPUSeconds: 5, MemoryBytes: 2 * gib},
				{ID: "104", CPUSeconds: 0, MemoryBytes: 0},
			},
		}
		if tot := l.Step(s1); tot[0].Joules.Of(SourceCPU) != 0 {
			t.Fatalf("first sample attributed energy: %+v", tot)
		}
		s2 := s1
		s2.At = t0.Add(10 * time.Second)
		s2.CPUJoules, s2.DRAMJoules = 6000, 800 // 1000 J CPU, 100 J DRAM
		s2.GPUs = []GPUDevice{{ID: "g0", JobID: "104", Joules: 1300}, {ID: "g1", Joules: 60}}
		s2.Jobs = []JobSample{
			{ID: "101", CPUSeconds: 33, MemoryBytes: 4 * gib},
			{ID: "102", CPUSeconds: 18, MemoryBytes: 2 * gib},
			{ID: "103", CPUSeconds: 21, MemoryBytes: 2 * gib},
			{ID: "104", CPUSeconds: 0, MemoryBytes: 0},
		}
		tot := l.Step(s2)
		var sumCPU, sumNode, sumGPU float64
		for i, want := range c.cpu {
			got := tot[i].Joules
			if got.CPU != want || got.DRAM != c.dram[i] || got.Node != c.node[i] {
				t.Errorf("%s job %s: got %v, want cpu %v dram %v ipmi %v", c.policy, s2.Jobs[i].ID, got, want, c.dram[i], c.node[i])
			}
			sumCPU += got.CPU
			sumNode += got.Node + got.GPU
			sumGPU += got.GPU
		}
		// IPMI: 200 W for 10 s = 2000 J, minus 350 J of GPUs = 1650 J split.
		if g := tot[3].Joules.Of(SourceGPU); g != 300 || sumGPU != 300 {
			t.Errorf("%s: GPU job got %v J (sum %v), want 300 (the idle GPU's 50 J to nobody)", c.policy, g, sumGPU)
		}
		if 1000-sumCPU != c.unattributedCPU {
			t.Errorf("%s: unattributed CPU energy %v, want %v", c.policy, 1000-sumCPU, c.unattributedCPU)
		}
		rest := l.Unattributed()
		if rest.CPU != c.unattributedCPU || rest.GPU != 50 || rest.CPU+sumCPU != 1000 {
			t.Errorf("%s: unattributed %+v", c.policy, rest)
		}
		if sumNode > 2000 {
			t.Errorf("%s: jobs got %v J of a 2000 J node", c.policy, sumNode)
		}
		// Grams use the whole-node view (ipmi + gpu) when IPMI is there.
		if want := (c.node[0]) / 3.6e6 * 56; tot[0].Grams != want {
			t.Errorf("%s: grams %v want %v", c.policy, tot[0].Grams, want)
		}
	}
}

// TestLedgerGapsAndResets: a scrape gap integrates the whole gap, a job
// whose CPU counter goes back is restarted, jobs unseen long are forgotten,
// a job missing from one scrape keeps its counter.
func TestLedgerGapsAndResets(t *testing.T) {
	l := NewLedger(PolicyJobs)
	t0 := time.Unix(0, 0)
	s := func(sec int, cpuJ float64, jobs ...JobSample) Sample {
		return Sample{At: t0.Add(time.Duration(sec) * time.Second), CPUs: 4, CPUJoules: cpuJ, HasCPU: true, Jobs: jobs}
	}
	l.Step(s(0, 0, JobSample{ID: "1", CPUSeconds: 10}))
	l.Step(s(10, 100, JobSample{ID: "1", CPUSeconds: 20}))
	// 10-minute gap: 6000 J, job 1 alone
	tot := l.Step(s(610, 6100, JobSample{ID: "1", CPUSeconds: 500}))
	if got := tot[0].Joules.Of(SourceCPU); got != 6100 {
		t.Fatalf("after gap: %v want 6100", got)
	}
	// job 1 missing from one scrape, back in the next: counter continues
	l.Step(s(620, 6200))
	tot = l.Step(s(630, 6300, JobSample{ID: "1", CPUSeconds: 510}))
	if got := tot[0].Joules.Of(SourceCPU); got != 6200 {
		t.Fatalf("after a missed scrape: %v want 6200", got)
	}
	// counter went back: a new cgroup under the same id starts from 0
	tot = l.Step(s(640, 6400, JobSample{ID: "1", CPUSeconds: 3}))
	if got := tot[0].Joules.Of(SourceCPU); got != 0 {
		t.Fatalf("after reset: %v want 0", got)
	}
	// the same sample time again changes nothing
	if tot2 := l.Step(s(640, 9999, JobSample{ID: "1", CPUSeconds: 3})); tot2[0].Joules.Of(SourceCPU) != 0 {
		t.Fatalf("repeated sample attributed energy")
	}
	l.Step(s(640+16*60, 9000))
	if len(l.jobs) != 0 {
		t.Fatalf("job not forgotten: %v", l.jobs)
	}
}

// TestLedgerNewJobInInterval: a job that appears between two scrapes gets
// the energy of all its CPU time.
func TestLedgerNewJobInInterval(t *testing.T) {
	l := NewLedger(PolicyJobs)
	t0 := time.Unix(0, 0)
	l.Step(Sample{At: t0, CPUs: 1, HasCPU: true, Jobs: []JobSample{{ID: "1", CPUSeconds: 0}}})
	tot := l.Step(Sample{At: t0.Add(10 * time.Second), CPUs: 1, CPUJoules: 100, HasCPU: true,
		Jobs: []JobSample{{ID: "1", CPUSeconds: 6}, {ID: "2", CPUSeconds: 2}}})
	if tot[0].Joules.Of(SourceCPU) != 75 || tot[1].Joules.Of(SourceCPU) != 25 {
		t.Fatalf("got %v %v", tot[0].Joules, tot[1].Joules)
	}
}

// TestAttributeNeverExceeds: for random inputs, per source, the jobs' sum
// never exceeds the node's energy, in floating point too.
func TestAttributeNeverExceeds(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := 0; n < 20000; n++ {
		in := Interval{Seconds: r.Float64() * 100, CPUs: float64(1 + r.IntN(256)), Memory: r.Float64() * 1e12,
			CPUJoules: r.Float64() * 1e6, DRAMJoules: r.Float64() * 1e5, NodeJoules: r.Float64() * 1e6,
			GPUJoules: r.Float64() * 1e5, HasCPU: true, HasDRAM: true, HasNode: true, HasGPU: true}
		jobs := make([]JobUse, r.IntN(40))
		for i := range jobs {
			// over-commit on purpose: jitter can make CPU time exceed capacity
			jobs[i] = JobUse{CPUSeconds: r.Float64() * in.Seconds * in.CPUs / 4, MemoryBytes: r.Float64() * in.Memory / 4,
				GPUJoules: r.Float64() * in.GPUJoules / 2}
		}
		for _, p := range []Policy{PolicyCapacity, PolicyJobs} {
			var c, d, nd, g float64
			for _, e := range Attribute(p, in, jobs) {
				if e.CPU < 0 || e.DRAM < 0 || e.Node < 0 || e.GPU < 0 {
					t.Fatalf("negative energy %+v", e)
				}
				c, d, nd, g = c+e.CPU, d+e.DRAM, nd+e.Node, g+e.GPU
			}
			if c > in.CPUJoules || d > in.DRAMJoules || g > in.GPUJoules || nd > max(in.NodeJoules-in.GPUJoules, 0) {
				t.Fatalf("%s: sums %v %v %v %v exceed %+v", p, c, d, nd, g, in)
			}
		}
	}
}

func TestSharesCapacityClamp(t *testing.T) {
	// 90 CPU-s used of an 80 CPU-s capacity (jitter): scaled to the used sum.
	s := Shares(PolicyCapacity, []float64{60, 30}, 80)
	if s[0]+s[1] > 1 || s[0] != 60.0/90 {
		t.Fatalf("shares %v", s)
	}
	if s := Shares(PolicyJobs, []float64{0, 0}, 0); s[0] != 0 || s[1] != 0 {
		t.Fatalf("no use must give no share: %v", s)
	}
}

func TestParsePolicy(t *testing.T) {
	if _, err := ParsePolicy("capacity"); err != nil {
		t.Fatal(err)
	}
	if _, err := ParsePolicy("idle"); err == nil {
		t.Fatal("bad policy accepted")
	}
}

// BenchmarkLedgerStep: one scrape's attribution for 1000 jobs.
func BenchmarkLedgerStep(b *testing.B) {
	l := NewLedger(PolicyCapacity)
	jobs := make([]JobSample, 1000)
	for i := range jobs {
		jobs[i] = JobSample{ID: string(rune('a'+i%26)) + time.Duration(i).String(), MemoryBytes: 1 << 30}
	}
	t0 := time.Unix(0, 0)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		for j := range jobs {
			jobs[j].CPUSeconds += float64(j % 7)
		}
		l.Step(Sample{At: t0.Add(time.Duration(i) * time.Second), CPUs: 128, Memory: 1 << 40,
			CPUJoules: float64(i) * 500, DRAMJoules: float64(i) * 50, HasCPU: true, HasDRAM: true, Jobs: jobs})
	}
}
