// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/jobscope/jobscope/test/kernels/report"
)

type row struct {
	boot
	res      *report.Result
	took     time.Duration
	err      error
	log      string
	problems []string
}

// check compares one kernel's result with what is expected of it, and the
// loader's feature probes with what the verifier really accepted.
func check(b boot, r *report.Result, err error) []string {
	if err != nil {
		return []string{err.Error()}
	}
	p := append([]string(nil), r.Failures...)
	prog := map[string]string{}
	for _, x := range r.Programs {
		prog[x.Name] = x.Err
	}
	if _, listed := prog["account_switch_plain"]; !listed {
		p = append(p, "no per-program results")
	} else if r.Probes["BTF"] == "" {
		if ts, plain := r.Probes["TaskStorage"] == "", prog["account_switch_plain"] == ""; ts != plain {
			p = append(p, fmt.Sprintf("task storage probe says %v, account_switch_plain loads: %v", ts, plain))
		}
		if r.Probes["LiveCPU"] == "" && (prog["fold_running"] != "" || prog["account_switch"] != "") {
			p = append(p, "the LiveCPU probe passes, but fold_running or account_switch is refused")
		}
	}
	ebpf := r.Product.Success["ebpf"]
	switch b.want {
	case wantAll:
		for n, e := range prog {
			if e != "" {
				p = append(p, fmt.Sprintf("%s refused: %s", n, e))
			}
		}
		if r.Direct == nil || r.Direct.LiveErr != "" || r.Direct.NetErr != "" || ebpf != 1 {
			p = append(p, fmt.Sprintf("want every program attached and live: load %q, direct %+v, ebpf success %v", r.LoadErr, r.Direct, ebpf))
		}
		for _, want := range []string{"per-core eBPF", "IO eBPF", "network eBPF"} {
			if !strings.Contains(families(r), want) {
				p = append(p, fmt.Sprintf("want the job's %s series in the scrape: %s", want, families(r)))
			}
		}
	case wantNone:
		if r.Direct != nil || ebpf != 0 {
			p = append(p, fmt.Sprintf("want eBPF off on this kernel, it loaded (ebpf success %v)", ebpf))
		}
		cause, _, _ := strings.Cut(r.LoadErr, ":")
		n := 0
		for _, l := range r.Product.Log {
			if strings.Contains(l, "collector unavailable") && strings.Contains(l, cause) {
				n++
			}
		}
		if n != 1 {
			p = append(p, fmt.Sprintf("want the cause %q logged once by jobscope, got %d times: %q", cause, n, r.Product.Log))
		}
	}
	return p
}

func verdict(problems []string) string {
	if len(problems) == 0 {
		return "PASS"
	}
	return "FAIL"
}

// render is the table (markdown), then every problem.
func render(rows []row) string {
	var b strings.Builder
	b.WriteString("| kernel | probes: BTF, task storage, live CPU | programs the verifier accepts | jobscope eBPF | a job's series | per-core vs cpu.stat, live reads | boot+check | result |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|\n")
	for _, rw := range rows {
		r := rw.res
		if r == nil {
			fmt.Fprintf(&b, "| %s | | | | | | %s | FAIL |\n", rw.name, rw.took.Round(time.Second))
			continue
		}
		fmt.Fprintf(&b, "| %s (%s) | %s | %s | %s | %s | %s | %s | %s |\n", r.Kernel, rw.name, probes(r), programs(r),
			tier(r), families(r), reads(r), rw.took.Round(time.Second), verdict(rw.problems))
	}
	for _, rw := range rows {
		for _, p := range rw.problems {
			fmt.Fprintf(&b, "\n- %s: %s", rw.name, p)
		}
	}
	b.WriteString("\n")
	return b.String()
}

func probes(r *report.Result) string {
	var out []string
	for _, n := range []string{"BTF", "TaskStorage", "LiveCPU"} {
		if r.Probes[n] == "" {
			out = append(out, "yes")
		} else {
			out = append(out, "no")
		}
	}
	return strings.Join(out, ", ")
}

func programs(r *report.Result) string {
	var refused []string
	for _, p := range r.Programs {
		if p.Err != "" {
			refused = append(refused, p.Name)
		}
	}
	if len(refused) == 0 {
		return fmt.Sprintf("all %d", len(r.Programs))
	}
	return fmt.Sprintf("%d of %d (not %s)", len(r.Programs)-len(refused), len(r.Programs), strings.Join(refused, ", "))
}

func tier(r *report.Result) string {
	if r.Direct == nil {
		cause, _, _ := strings.Cut(r.LoadErr, ":")
		return "off (" + cause + ")"
	}
	s := fmt.Sprintf("%d attached, %d of %d handed over", r.Direct.Attached, r.Direct.HandedOver, r.Direct.Pinned)
	if r.Direct.LiveErr != "" {
		s += ", CPU at switch-out only"
	}
	if r.Direct.NetErr != "" {
		s += ", no network"
	}
	return s
}

// families says where the job's per-core CPU, IO and network series came
// from in the scrape.
func families(r *report.Result) string {
	has := map[string]bool{}
	for _, f := range r.Product.Families {
		has[strings.TrimPrefix(f, "slurm_job_")] = true
	}
	pick := func(options ...string) string {
		for i := 0; i+1 < len(options); i += 2 {
			if has[options[i]] {
				return options[i+1]
			}
		}
		return "none"
	}
	return fmt.Sprintf("per-core %s; IO %s; network %s; memory %s",
		pick("cpu_core_seconds_total", "eBPF"),
		pick("io_syscall_bytes_total", "eBPF", "process_syscall_io_bytes_total", "procfs (live processes)"),
		pick("network_bytes_total", "eBPF"),
		pick("memory_usage_bytes", "cgroup"))
}

// reads says whether each live read lay between cpu.stat read just before
// and just after it, and how far apart those two were (the read's own
// duration in the job's CPU time: wide under TCG).
func reads(r *report.Result) string {
	if r.Direct == nil || len(r.Direct.Reads) == 0 {
		return "-"
	}
	inside, widest := 0, 0.0
	for _, x := range r.Direct.Reads {
		if x[1] >= x[0] && x[1] <= x[2]+1000 {
			inside++
		}
		widest = math.Max(widest, float64(x[2]-x[0])/float64(x[0]))
	}
	return fmt.Sprintf("%d of %d reads between cpu.stat before and after (widest %.2f%%)", inside, len(r.Direct.Reads), 100*widest)
}
