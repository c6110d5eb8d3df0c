// SPDX-License-Identifier: Apache-2.0

package gpu

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// gpuVars are the environment variables that name a job's GPUs. The
// SLURM_* ones hold node-wide indices (or UUIDs); CUDA_VISIBLE_DEVICES and
// GPU_DEVICE_ORDINAL hold UUIDs (Slurm 25.11 and later) or indices that,
// with ConstrainDevices, count from 0 inside each step.
var (
	slurmGPUVars = []string{"SLURM_STEP_GPUS", "SLURM_JOB_GPUS"}
	cudaGPUVars  = []string{"CUDA_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL"}
)

// envRefs is what one or more environments of a job say about its GPUs.
type envRefs struct {
	refs []ref // SLURM_*_GPUS values and UUIDs from any variable
	// cudaIdx are indices from CUDA_VISIBLE_DEVICES/GPU_DEVICE_ORDINAL:
	// trusted only when no environment of the job has SLURM_*_GPUS, since
	// Slurm sets both and then the CUDA ones are step-relative.
	cudaIdx  []ref
	sawSlurm bool
	bad      []string // tokens neither an index nor a UUID
}

func (e *envRefs) merge(o envRefs) {
	e.refs = appendRefs(e.refs, o.refs...)
	e.cudaIdx = appendRefs(e.cudaIdx, o.cudaIdx...)
	e.sawSlurm = e.sawSlurm || o.sawSlurm
}

// usable returns the references to claim.
func (e *envRefs) usable() []ref {
	if e.sawSlurm {
		return e.refs
	}
	return appendRefs(append([]ref(nil), e.refs...), e.cudaIdx...)
}

// refsFromVars reads one environment.
func refsFromVars(vars map[string]string) envRefs {
	var out envRefs
	add := func(k string, slurm bool) {
		for _, tok := range strings.Split(vars[k], ",") {
			tok = strings.TrimSpace(tok)
			if tok == "" || tok == "NoDevFiles" {
				continue
			}
			var rs []ref
			if lo, hi, ok := strings.Cut(tok, "-"); ok && isDigits(lo) && isDigits(hi) {
				a, _ := strconv.Atoi(lo)
				b, _ := strconv.Atoi(hi)
				for i := a; i <= b && i-a < 256; i++ {
					rs = append(rs, ref{kind: 'i', index: i})
				}
			} else if r, ok := parseRef(tok); ok {
				rs = append(rs, r)
			} else {
				out.bad = append(out.bad, fmt.Sprintf("%s=%q: %q is neither an index nor a GPU/MIG UUID", k, vars[k], tok))
				continue
			}
			for _, r := range rs {
				if slurm || r.kind == 'u' {
					out.refs = appendRefs(out.refs, r)
				} else {
					out.cudaIdx = appendRefs(out.cudaIdx, r)
				}
			}
		}
	}
	for _, k := range slurmGPUVars {
		if vars[k] != "" {
			out.sawSlurm = true
		}
		add(k, true)
	}
	for _, k := range cudaGPUVars {
		add(k, false)
	}
	return out
}

// parseRef reads one GPU token: an index, or a GPU or MIG UUID in any case
// (NVML prints GPU-/MIG- and lower-case hex; a hand-written file may not).
func parseRef(tok string) (ref, bool) {
	if u := canonUUID(tok); u != "" {
		return ref{kind: 'u', uuid: u}, true
	}
	if isDigits(tok) {
		n, err := strconv.Atoi(tok)
		return ref{kind: 'i', index: n}, err == nil
	}
	return ref{}, false
}

// canonUUID returns a GPU or MIG UUID (GPU-…, MIG-…, CUDA 11.0's
// MIG-GPU-…/gi/ci) as NVML prints it: the prefix in upper case, the rest in
// lower case; "" for anything else.
func canonUUID(s string) string {
	if len(s) <= 4 {
		return ""
	}
	p := strings.ToUpper(s[:4])
	if p != "GPU-" && p != "MIG-" {
		return ""
	}
	rest := strings.ToLower(s[4:])
	if p == "MIG-" && strings.HasPrefix(rest, "gpu-") {
		rest = "GPU-" + rest[4:]
	}
	return p + rest
}

// readGPUVars reads the GPU variables of one /proc/<pid>/environ; nil when
// unreadable or when the process has none. A value over maxGPUValue is
// dropped whole.
func readGPUVars(path string) map[string]string {
	b, err := readEnviron(path)
	if err != nil {
		return nil
	}
	var vars map[string]string
	for _, rec := range bytes.Split(b, []byte{0}) {
		k, v, ok := strings.Cut(string(rec), "=")
		if !ok || len(v) > maxGPUValue {
			continue
		}
		for _, want := range slurmGPUVars {
			if k == want {
				if vars == nil {
					vars = map[string]string{}
				}
				vars[k] = v
			}
		}
		for _, want := range cudaGPUVars {
			if k == want {
				if vars == nil {
					vars = map[string]string{}
				}
				vars[k] = v
			}
		}
	}
	return vars
}

// devIndex resolves references to the UUID of an assignable device.
type devIndex struct {
	byIndex, byMinor map[int]string
	byUUID           map[string]string
	uuids            []string
}

func newDevIndex(devs []Device) *devIndex {
	ix := &devIndex{byIndex: map[int]string{}, byMinor: map[int]string{}, byUUID: map[string]string{}}
	for _, d := range devs {
		// A MIG-enabled parent is not assignable: its index, minor and UUID
		// resolve to nothing (jobs get instances, named by MIG UUID).
		target := d.UUID
		if d.MIGEnabled {
			target = ""
		}
		if d.IsMIG() {
			ix.byUUID[canonUUID(d.UUID)] = d.UUID
			// CUDA 11.0's form MIG-GPU-<parent uuid>/<gi>/<ci>.
			ix.byUUID[canonUUID(fmt.Sprintf("MIG-%s/%d/%d", d.ParentUUID, d.GPUInstanceID, d.ComputeInstanceID))] = d.UUID
			ix.uuids = append(ix.uuids, d.UUID)
			continue
		}
		ix.byIndex[d.Index] = target
		if d.Minor >= 0 {
			ix.byMinor[d.Minor] = target
		}
		ix.byUUID[canonUUID(d.UUID)] = target
		ix.uuids = append(ix.uuids, d.UUID)
	}
	return ix
}

func (ix *devIndex) resolve(r ref) string {
	switch r.kind {
	case 'i':
		return ix.byIndex[r.index]
	case 'm':
		return ix.byMinor[r.index]
	case 'u':
		if u, ok := ix.byUUID[r.uuid]; ok {
			return u
		}
		// CUDA accepts an unambiguous UUID prefix.
		found := ""
		for _, u := range ix.uuids {
			if strings.HasPrefix(canonUUID(u), r.uuid) {
				if found != "" {
					return ""
				}
				found = u
			}
		}
		return ix.byUUID[canonUUID(found)]
	}
	return ""
}
