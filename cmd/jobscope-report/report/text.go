// SPDX-License-Identifier: Apache-2.0

package report

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Width is the text report's line limit.
const Width = 100

// labelWidth is the column the figures start at.
const labelWidth = 10

// span is a piece of a line with its ANSI colour code ("" for none).
type span struct{ code, text string }

func plain(t string) span { return span{"", t} }
func bold(t string) span  { return span{"1", t} }

func severity(sev string) span {
	code := map[string]string{Critical: "1;31", Warn: "1;33", Info: "1;36"}[sev]
	return span{code, fmt.Sprintf("%-9s", strings.ToUpper(sev))}
}

// textWriter writes labelled, wrapped lines. It is the one place text
// output leaves the report: every span goes through termSafe before the
// colour codes (the only escapes written) are put around it.
type textWriter struct {
	w     io.Writer
	color bool
	err   error
}

func (t *textWriter) out(spans ...span) {
	if t.err != nil {
		return
	}
	var b strings.Builder
	for _, s := range spans {
		if t.color && s.code != "" {
			b.WriteString("\x1b[" + s.code + "m" + termSafe(s.text) + "\x1b[0m")
		} else {
			b.WriteString(termSafe(s.text))
		}
	}
	b.WriteByte('\n')
	_, t.err = io.WriteString(t.w, b.String())
}

func (t *textWriter) line(s string) { t.out(plain(s)) }

// field writes "Label     text", wrapping text under the figures' column.
func (t *textWriter) field(label string, parts ...string) {
	text := strings.Join(nonEmpty(parts), "; ")
	if text == "" {
		return
	}
	lines := wrap(text, Width-labelWidth)
	for i, l := range lines {
		lab := ""
		if i == 0 {
			lab = label
		}
		t.out(bold(fmt.Sprintf("%-*s", labelWidth, lab)), plain(l))
	}
}

// WriteText renders the report for a terminal or a file: at most Width
// columns, colour only when color is true.
func WriteText(w io.Writer, rep *Report, loc *time.Location, color bool) error {
	t := &textWriter{w: w, color: color}
	j := rep.Job
	head := "Job " + j.ID
	if j.ArrayJobID != "" {
		head += " (array " + j.ArrayJobID + "_" + j.ArrayTaskID + ")"
	}
	if j.Name != "" {
		head += " \"" + j.Name + "\""
	}
	t.out(bold(clip(head, Width)))
	t.field("Owner", "user "+orDash(j.User), "account "+orDash(j.Account), "partition "+orDash(j.Partition),
		opt("qos ", j.QOS), opt("cluster ", j.Cluster))
	state := j.State
	if j.ExitCode != "" && !j.Running {
		state += " (exit " + j.ExitCode + ")"
	}
	t.field("State", state+" on "+plural(float64(len(j.Nodes)), "one", "node", "nodes")+": "+strings.Join(j.Nodes, ", "))
	t.field("Time", timeLine(j, loc)...)
	t.line("")
	writeFigures(t, rep)
	if len(rep.Nodes) > 1 {
		t.line("")
		writeNodes(t, rep.Nodes)
	}
	t.line("")
	writeWarnings(t, rep.Warnings)
	if len(rep.Notes) > 0 {
		t.line("")
		t.out(bold("Notes"))
		for _, n := range rep.Notes {
			for i, l := range wrap(n, Width-4) {
				t.line(map[bool]string{true: "  - ", false: "    "}[i == 0] + l)
			}
		}
	}
	return t.err
}

func timeLine(j Job, loc *time.Location) []string {
	var parts []string
	if j.SubmitTime != nil {
		parts = append(parts, "submitted "+when(*j.SubmitTime, loc))
	}
	if j.WaitSeconds != nil {
		parts = append(parts, "waited "+fmtDuration(*j.WaitSeconds))
	}
	parts = append(parts, "started "+when(j.StartTime, loc))
	if j.EndTime != nil {
		parts = append(parts, "ended "+when(*j.EndTime, loc))
	} else {
		parts = append(parts, "still running")
	}
	run := "ran " + fmtDuration(j.ElapsedSeconds)
	if j.TimeLimitSeconds != nil {
		run += " of a " + fmtDuration(*j.TimeLimitSeconds) + " limit"
	}
	return append(parts, run)
}

// fact is one labelled line of figures, shared by the text and HTML output.
type fact struct {
	Label string
	Parts []string
}

func writeFigures(t *textWriter, rep *Report) {
	for _, f := range figureFacts(rep) {
		t.field(f.Label, f.Parts...)
	}
}

// figureFacts lists the job's figures as labelled lines; empty parts are
// figures Prometheus had no samples for.
func figureFacts(rep *Report) []fact {
	var out []fact
	add := func(label string, parts ...string) {
		if p := nonEmpty(parts); len(p) > 0 {
			out = append(out, fact{label, p})
		}
	}
	c, m := rep.CPU, rep.Memory
	cpu := []string{plural(c.Cores, "one", "core", "cores") + " allocated"}
	if c.Efficiency != nil {
		cpu[0] += fmt.Sprintf(", %s in use on average: efficiency %s", num(deref(c.CoresInUse)), pct(*c.Efficiency))
	}
	if c.UsedSeconds != nil {
		used := "used " + seconds(*c.UsedSeconds)
		if c.UserSeconds != nil && c.SystemSeconds != nil {
			used += fmt.Sprintf(": user %s, system %s", fmtDuration(*c.UserSeconds), fmtDuration(*c.SystemSeconds))
		}
		cpu = append(cpu, used)
	}
	cpu = append(cpu, optSeconds("throttled ", c.ThrottledSeconds), optPct("CPU pressure ", c.PressureSome))
	// The spread over cores says something for jobs with several cores
	// that used some CPU.
	if b := c.PerCore; b != nil && b.Cores > 1 && b.MeanSeconds*float64(b.Cores) >= 1 {
		cpu = append(cpu, fmt.Sprintf("90%% of the CPU time on %d of %d cores (%s)", b.CoresFor90Percent, b.Cores, b.Node))
	}
	add("CPU", cpu...)
	if len(c.TopExecutables) > 0 {
		var ex []string
		for _, e := range c.TopExecutables {
			ex = append(ex, clip(e.Exe, 40)+" "+seconds(e.Seconds))
		}
		add("Programs", ex...)
	}
	mem := []string{}
	if m.PeakBytes != nil {
		p := "peak " + bytesStr(*m.PeakBytes)
		if m.RequestedBytes != nil {
			p += " of " + bytesStr(*m.RequestedBytes) + " requested"
		}
		if m.PeakRatio != nil {
			p += " (" + pct(*m.PeakRatio) + map[bool]string{true: " on the fullest node", false: ""}[len(rep.Nodes) > 1] + ")"
		}
		mem = append(mem, p)
	}
	mem = append(mem, optBytes("mean ", m.MeanBytes), optBytes("anon ", m.AnonPeakBytes), optBytes("file ", m.FilePeakBytes),
		optBytes("swap ", m.SwapPeakBytes), optNum("OOM kills ", m.OOMKills), optPct("memory pressure ", m.PressureSome))
	add("Memory", mem...)
	out = append(out, gpuFacts(rep.GPU)...)
	io := rep.IO
	storage := ""
	if io.StorageReadBytes != nil || io.StorageWriteBytes != nil {
		storage = fmt.Sprintf("storage read %s, written %s", bytesOr(io.StorageReadBytes), bytesOr(io.StorageWriteBytes))
	}
	sys := ""
	if io.Syscalls != nil {
		sys = fmt.Sprintf("%s read/write calls", num(*io.Syscalls))
		if io.SyscallsPerSecond != nil && io.BytesPerSyscall != nil {
			sys += fmt.Sprintf(" (%s/s, %s each)", num(*io.SyscallsPerSecond), bytesStr(*io.BytesPerSyscall))
		}
	}
	if io.SyscallReadBytes != nil || io.SyscallWriteBytes != nil {
		sys = strings.TrimSpace(sys + fmt.Sprintf(" passing %s in, %s out", bytesOr(io.SyscallReadBytes), bytesOr(io.SyscallWriteBytes)))
	}
	block := ""
	if io.BlockReadBytes != nil || io.BlockWriteBytes != nil {
		block = fmt.Sprintf("block devices read %s, written %s", bytesOr(io.BlockReadBytes), bytesOr(io.BlockWriteBytes))
	}
	add("IO", storage, sys, block, optPct("IO pressure ", io.PressureSome))
	if n := rep.Network; n.ReceiveBytes != nil || n.TransmitBytes != nil {
		add("Network", "received "+bytesOr(n.ReceiveBytes), "sent "+bytesOr(n.TransmitBytes))
	}
	p := rep.Processes
	add("Processes", optNum("up to ", p.MaxProcesses, " processes"), optNum("", p.MaxThreads, " threads"),
		optNum("", p.MaxOpenFDs, " open files"))
	if e := rep.Energy; e.KWh != nil {
		en := fmt.Sprintf("%.3g kWh", *e.KWh)
		if e.HostSource != "" {
			en += " (" + e.HostSource
			if e.GPUJoules != nil && *e.GPUJoules > 0 {
				en += fmt.Sprintf(" + GPUs %.3g kWh", *e.GPUJoules/3.6e6)
			}
			en += ")"
		}
		add("Energy", en, optNum("", e.EmissionsGrams, " gCO2e"))
	}
	return out
}

func gpuFacts(g GPU) []fact {
	if g.Count == 0 {
		return nil
	}
	head := plural(float64(g.Count), "one", "GPU", "GPUs")
	if g.UtilizationMean != nil {
		head += ", busy " + pct(*g.UtilizationMean) + " of the time on average"
	}
	if g.IdleCount > 0 {
		head += fmt.Sprintf(", %d idle", g.IdleCount)
	}
	out := []fact{{"GPU", []string{head}}}
	for _, d := range g.Devices {
		line := fmt.Sprintf("%s GPU %s %s", d.Node, gpuName(d), clip(d.Model, 28))
		line += optPct(": busy ", d.UtilizationMean) + optPct(", idle ", d.IdleFraction)
		if d.MemoryPeakBytes != nil {
			line += ", memory " + bytesStr(*d.MemoryPeakBytes)
			if d.MemoryTotalBytes != nil {
				line += " of " + bytesStr(*d.MemoryTotalBytes)
			}
		}
		line += optPct(", SM ", d.SMActiveMean) + optPct(", tensor ", d.TensorActiveMean)
		out = append(out, fact{"", []string{line}})
	}
	return out
}

func writeNodes(t *textWriter, nodes []Node) {
	t.out(bold(fmt.Sprintf("%-*s", labelWidth, "Nodes")), plain(fmt.Sprintf("%-24s %6s %8s %10s %8s %5s %5s",
		"node", "cores", "CPU eff", "mem peak", "of req", "OOM", "GPUs")))
	for _, n := range nodes {
		t.line(strings.Repeat(" ", labelWidth) + fmt.Sprintf("%-24s %6s %8s %10s %8s %5s %5d", clip(n.Name, 24),
			num(n.Cores), pctOr(n.CPUEfficiency), bytesOr(n.MemoryPeakBytes), pctOr(n.MemoryPeakRatio),
			numOr(n.OOMKills), n.GPUs))
	}
}

func writeWarnings(t *textWriter, ws []Warning) {
	if len(ws) == 0 {
		t.out(bold("Warnings"), plain("  none: the job used what it asked for."))
		return
	}
	t.out(bold("Warnings"))
	for _, w := range ws {
		for i, l := range wrap(w.Message, Width-12) {
			if i == 0 {
				t.out(plain("  "), severity(w.Severity), plain(" "+l))
			} else {
				t.line(strings.Repeat(" ", 12) + l)
			}
		}
		for i, l := range wrap(w.Advice, Width-15) {
			lead := map[bool]string{true: "-> ", false: "   "}[i == 0]
			t.line(strings.Repeat(" ", 12) + lead + l)
		}
	}
}
