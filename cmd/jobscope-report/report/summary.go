// SPDX-License-Identifier: Apache-2.0

package report

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/jobscope/jobscope/internal/js1"
	"github.com/jobscope/jobscope/slurmcli"
)

// SummaryNote marks a report built from the job's JS1 summary in Slurm's
// accounting (docs/report.md, "Job summaries in Slurm's accounting").
const SummaryNote = "This report is from the job's accounting summary (Prometheus no longer holds its series): " +
	"totals only, no charts."

// SourceSummary is Job.StartSource and Job.EndSource of such a report.
const SourceSummary = "accounting_summary"

// toSummary folds a finished job's report into the JS1 object, in
// jobstats' units (js1.Summary), with jobscope's own fields beside them.
func toSummary(rep *Report) *js1.Summary {
	s := &js1.Summary{GPUs: rep.GPU.Count, TotalTime: rep.Job.ElapsedSeconds, Nodes: map[string]js1.Node{}}
	for _, n := range rep.Nodes {
		s.Nodes[n.Name] = js1.Node{CPUs: int(n.Cores + 0.5), TotalMemory: deref(n.MemoryRequestedBytes),
			UsedMemory: deref(n.MemoryPeakBytes), TotalTime: deref(n.CPUUsedSeconds)}
	}
	for _, d := range rep.GPU.Devices {
		n, ok := s.Nodes[d.Node]
		if !ok || d.Index == "" {
			continue
		}
		put := func(m *map[string]float64, v *float64, scale float64) {
			if v == nil {
				return
			}
			if *m == nil {
				*m = map[string]float64{}
			}
			(*m)[d.Index] = *v * scale
		}
		put(&n.GPUTotalMemory, d.MemoryTotalBytes, 1)
		put(&n.GPUUsedMemory, d.MemoryPeakBytes, 1)
		put(&n.GPUUtilization, d.UtilizationMean, 100) // jobstats: percent
		s.Nodes[d.Node] = n
	}
	j := rep.Job
	x := &js1.Extra{Version: js1.ExtraVersion, Key: j.Key, Cluster: j.Cluster, User: j.User, Account: j.Account,
		State: j.State, Start: j.StartTime.Unix(), CPUUser: rep.CPU.UserSeconds, CPUSystem: rep.CPU.SystemSeconds,
		OOMKills: rep.Memory.OOMKills}
	if j.EndTime != nil {
		x.End = j.EndTime.Unix()
	}
	for _, w := range rep.Warnings {
		if len(x.Warnings) < js1.MaxWarnings {
			x.Warnings = append(x.Warnings, w.ID)
		}
	}
	s.Jobscope = x
	return s
}

// fromSummary builds a report from a decoded summary and the job's sacct
// record (which says who, where and when even for jobstats' summaries).
func (r *runner) fromSummary(rec slurmcli.CommentRecord, s *js1.Summary) *Report {
	j := Job{ID: rec.ID, Cluster: rec.Cluster, User: rec.User, Account: rec.Account, State: rec.State,
		StartTime: rec.Start, ElapsedSeconds: rec.Elapsed.Seconds(), StartSource: SourceSummary,
		EndSource: SourceSummary, OtherJobsWithID: []JobRef{}}
	if x := s.Jobscope; x != nil {
		j.Key = x.Key
	}
	if !rec.End.IsZero() {
		end := rec.End
		j.EndTime = &end
	}
	if j.ElapsedSeconds == 0 {
		j.ElapsedSeconds = s.TotalTime
	}
	j.ObservedSeconds = j.ElapsedSeconds
	j.FirstSample, j.LastSample = j.StartTime, j.StartTime.Add(time.Duration(j.ElapsedSeconds*float64(time.Second)))
	rep := &Report{Schema: JobSchema, GeneratedAt: r.now, Job: j, Charts: []Chart{},
		Notes: []string{SummaryNote}}
	names := make([]string, 0, len(s.Nodes))
	for n := range s.Nodes {
		names = append(names, n)
	}
	sort.Strings(names)
	var used, peak, req, ratio float64
	var gpuUtil []float64
	for _, name := range names {
		n := s.Nodes[name]
		rep.Job.Nodes = append(rep.Job.Nodes, name)
		nd := Node{Name: name, Cores: float64(n.CPUs), CPUUsedSeconds: ptr(n.TotalTime),
			MemoryPeakBytes: ptr(n.UsedMemory), GPUs: len(n.GPUTotalMemory)}
		if n.TotalMemory > 0 {
			nd.MemoryRequestedBytes = ptr(n.TotalMemory)
			nd.MemoryPeakRatio = ptr(n.UsedMemory / n.TotalMemory)
			ratio = max(ratio, *nd.MemoryPeakRatio)
		}
		if nd.Cores > 0 && j.ElapsedSeconds > 0 {
			nd.CPUEfficiency = ptr(n.TotalTime / (nd.Cores * j.ElapsedSeconds))
		}
		rep.Nodes = append(rep.Nodes, nd)
		rep.CPU.Cores += nd.Cores
		used += n.TotalTime
		peak += n.UsedMemory
		req += n.TotalMemory
		idx := make([]string, 0, len(n.GPUTotalMemory))
		for k := range n.GPUTotalMemory {
			idx = append(idx, k)
		}
		sort.Strings(idx)
		for _, k := range idx {
			d := GPUDevice{Node: name, Index: k, MemoryTotalBytes: ptr(n.GPUTotalMemory[k])}
			if v, ok := n.GPUUsedMemory[k]; ok {
				d.MemoryPeakBytes = ptr(v)
			}
			if v, ok := n.GPUUtilization[k]; ok {
				d.UtilizationMean = ptr(v / 100)
				gpuUtil = append(gpuUtil, v/100)
			}
			rep.GPU.Devices = append(rep.GPU.Devices, d)
		}
	}
	rep.CPU.UsedSeconds = ptr(used)
	if rep.CPU.Cores > 0 && j.ElapsedSeconds > 0 {
		rep.CPU.Efficiency = ptr(used / (rep.CPU.Cores * j.ElapsedSeconds))
		rep.CPU.CoresInUse = ptr(used / j.ElapsedSeconds)
	}
	rep.Memory.PeakBytes = ptr(peak)
	if req > 0 {
		rep.Memory.RequestedBytes, rep.Memory.PeakRatio = ptr(req), ptr(ratio)
	}
	rep.GPU.Count = s.GPUs
	if len(gpuUtil) > 0 {
		var sum float64
		for _, v := range gpuUtil {
			sum += v
		}
		rep.GPU.UtilizationMean = ptr(sum / float64(len(gpuUtil)))
	}
	if x := s.Jobscope; x != nil {
		rep.CPU.UserSeconds, rep.CPU.SystemSeconds, rep.Memory.OOMKills = x.CPUUser, x.CPUSystem, x.OOMKills
	}
	rep.Warnings = warnings(rep, r.cfg.Thresholds, r.cfg.HelpURL)
	if rep.Warnings == nil {
		rep.Warnings = []Warning{}
	}
	return rep
}

// summaryReport is the report of a job Prometheus no longer holds, from
// its AdminComment; ok is false when there is none to use, and note then
// says why when the comment was there but unusable.
func (r *runner) summaryReport(ctx context.Context, id string) (rep *Report, note string, ok bool) {
	if r.slurm == nil || (r.cfg.Sacct == "auto" && !onPath(r.slurm.Path("sacct"))) {
		return nil, "", false
	}
	recs, err := slurmcli.SacctComments(ctx, r.slurm, slurmcli.CommentQuery{JobID: id, Cluster: r.cfg.Cluster}, r.loc)
	if err != nil && !slurmcli.Partial(err) {
		return nil, "", false
	}
	var found []slurmcli.CommentRecord
	for _, rec := range recs {
		if rec.ID == id && js1.Classify(rec.AdminComment) == js1.JS1 {
			found = append(found, rec)
		}
	}
	if len(found) != 1 {
		// None, or a reused id with several summaries: the ordinary
		// not-found message lists what sacct knows.
		return nil, "", false
	}
	s, err := js1.Decode(found[0].AdminComment)
	switch {
	case errors.Is(err, js1.ErrNoData):
		return nil, fmt.Sprintf("job %s's accounting summary says it has no figures (too short, or no data)", id), false
	case err != nil:
		return nil, fmt.Sprintf("job %s's accounting summary could not be read: %v", id, err), false
	}
	return r.fromSummary(found[0], s), "", true
}

// missing answers for a job id Prometheus has no series of: the report
// from the job's accounting summary where it has one, else why not.
func (r *runner) missing(ctx context.Context, id string) (*Report, error) {
	rep, note, ok := r.summaryReport(ctx, id)
	if ok {
		return rep, nil
	}
	err := r.notFound(ctx, id)
	if note != "" {
		err = fmt.Errorf("%w; %s", err, note)
	}
	return nil, err
}
