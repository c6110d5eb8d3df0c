// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jobscope/jobscope/bpf"
	"github.com/jobscope/jobscope/test/kernels/report"
)

// The reader runs on readCPU, the burner alone on burnCPU.
const readCPU, burnCPU = 0, 1

func run(r *report.Result, jobscope string) error {
	v2, err := v2Mount()
	if err != nil {
		return err
	}
	pinSelf(readCPU)
	probe(r)
	direct(r, v2)
	product(r, jobscope, v2)
	return nil
}

func probe(r *report.Result) {
	k := bpf.KernelFeatures()
	r.Probes = map[string]string{}
	for name, f := range map[string]func() error{"BTF": k.BTF, "TaskStorage": k.TaskStorage, "LiveCPU": k.LiveCPU} {
		r.Probes[name] = errString(f())
	}
	checks, err := bpf.CheckPrograms(bpf.V1None)
	if err != nil {
		r.Failures = append(r.Failures, "loading the maps: "+err.Error())
	}
	for _, c := range checks {
		r.Programs = append(r.Programs, report.Program{Name: c.Name, Err: firstLine(errString(c.Err)), Insns: c.Insns})
	}
}

// direct loads the programs as jobscope does and checks what they count:
// a thread that stays on its core, read three times while it runs, in a job
// directory named by a SLUID; job_<id>; a look-alike name that must not
// count; and a job's syscall IO and network bytes. Between the first and
// the others the programs' holder exits and a second one loads on the same
// pins, as a restart does: the short burners run while nothing holds the
// programs (pinned links keep them attached), and the second load must
// take every hook over.
func direct(r *report.Result, v2 string) {
	pin := "/sys/fs/bpf/jobscope_matrix_direct_" + jobID()
	cfg := bpf.Config{PinPath: pin, MaxJobs: 64, V2JobLevel: 3, CgroupV2: v2}
	o, err := bpf.Load(cfg)
	if err != nil {
		r.LoadErr = err.Error()
		return
	}
	defer func() {
		if o != nil {
			o.Close()
		}
		_ = bpf.Unpin(pin)
		os.Remove(pin)
	}()
	d := &report.Direct{Attached: o.Attached(), LiveErr: errString(o.LiveErr()), NetErr: errString(o.NetworkErr()), Counted: map[string]bool{}}
	r.Direct = d
	fail := func(f string, a ...any) { r.Failures = append(r.Failures, fmt.Sprintf(f, a...)) }
	id := jobID()
	names := []string{sluid(), "job_" + id, "job_x" + id}
	dirs := map[string]string{}
	for _, n := range names {
		dirs[n] = mkJob(v2, n)
		defer rmJob(v2, n)
	}

	// 1. Live reads of a burner in the SLUID job.
	burn, err := startIn(dirs[names[0]], "burn", nil, "JSX_FOR=4s", fmt.Sprintf("JSX_CPU=%d", burnCPU))
	if err != nil {
		fail("burner: %v", err)
		return
	}
	key := dirKey(dirs[names[0]])
	for i := 0; i < 3; i++ {
		time.Sleep(time.Second)
		before := usage(dirs[names[0]])
		snap, err := o.Read()
		if err != nil {
			fail("read: %v", err)
			break
		}
		after := usage(dirs[names[0]])
		var got uint64
		if c := snap.Jobs[key]; c != nil {
			got = sum(c.CPUNs)
		}
		d.Reads = append(d.Reads, [3]uint64{before, got, after})
		// cpu.stat cannot be read at the instant of the map read: the sum
		// must lie between the reads around it (+1 µs of truncation).
		if d.LiveErr == "" && (got < before || got > after+1000) {
			fail("read %d: per-core %d ns outside cpu.stat [%d, %d]", i, got, before, after)
		}
	}
	_ = burn.Wait() // ends by its own timer

	// 2. A restart: the holder lets go, short burners in job_<id> and the
	// look-alike start and end, a new holder takes the programs over.
	pinned := len(bpf.PinnedLinks(pin))
	o.Close()
	o = nil
	for _, n := range names[1:] {
		b, err := startIn(dirs[n], "burn", nil, "JSX_FOR=300ms", fmt.Sprintf("JSX_CPU=%d", burnCPU))
		if err == nil {
			_ = b.Wait()
		}
	}
	if o, err = bpf.Load(cfg); err != nil {
		fail("load after the restart: %v", err)
		return
	}
	d.Pinned, d.HandedOver = pinned, o.HandedOver()
	if pinned == 0 || d.HandedOver != pinned {
		fail("restart: %d of %d pinned links handed over", d.HandedOver, pinned)
	}

	// 3. IO and network of job_<id>.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fail("listen: %v", err)
		return
	}
	defer ln.Close()
	d.Sent, d.Written = 4<<20, 4<<20
	go func() {
		if c, err := ln.Accept(); err == nil {
			_, _ = io.Copy(io.Discard, c) // the counters, not the copy, are checked
			c.Close()
		}
	}()
	ioc, err := startIn(dirs[names[1]], "io", nil, "JSX_FILE=/tmp/jsx-io", fmt.Sprintf("JSX_BYTES=%d", d.Written), "JSX_ADDR="+ln.Addr().String())
	if err == nil {
		err = ioc.Wait()
	}
	os.Remove("/tmp/jsx-io")
	if err != nil {
		fail("io job: %v", err)
	}
	time.Sleep(100 * time.Millisecond)

	snap, err := o.Read()
	if err != nil {
		fail("read: %v", err)
		return
	}
	for _, n := range names {
		c := snap.Jobs[dirKey(dirs[n])]
		d.Counted[n] = c != nil
		if c != nil && !strings.HasPrefix(n, "job_x") {
			if got, want := sum(c.CPUNs), usage(dirs[n]); math.Abs(float64(got)-float64(want)) > 0.01*float64(want) {
				fail("%s: per-core %d ns, cpu.stat %d ns after its tasks exited", n, got, want)
			}
		}
	}
	if !d.Counted[names[0]] || !d.Counted[names[1]] || d.Counted[names[2]] {
		fail("job directories counted: %v, want the SLUID and job_<id> only", d.Counted)
	}
	if c := snap.Jobs[dirKey(dirs[names[1]])]; c != nil {
		d.WChar, d.TxBytes = c.WChar, c.TxBytes
		if c.WChar < d.Written+d.Sent {
			fail("wchar %d < %d written and sent", c.WChar, d.Written+d.Sent)
		}
		if d.NetErr == "" && (c.TxBytes < d.Sent || float64(c.TxBytes) > 1.03*float64(d.Sent)) {
			fail("tx_bytes %d for %d sent", c.TxBytes, d.Sent)
		}
	}
}

// mkJob makes system.slice/node1_slurmstepd.scope/<name>/step_0/user/task_0
// and returns the task directory.
func mkJob(v2, name string) string {
	task := filepath.Join(v2, "system.slice", "node1_slurmstepd.scope", name, "step_0", "user", "task_0")
	_ = os.MkdirAll(task, 0o755) // moving a burner into it fails and says so
	enableControllers(v2, task)
	return task
}

func rmJob(v2, name string) {
	job := filepath.Join(v2, "system.slice", "node1_slurmstepd.scope", name)
	for _, d := range []string{"step_0/user/task_0", "step_0/user", "step_0", ""} {
		os.Remove(filepath.Join(job, d))
	}
}

// dirKey is the key of the job directory above a task directory.
func dirKey(task string) bpf.Key {
	k, _ := bpf.DirKey(0, filepath.Dir(filepath.Dir(filepath.Dir(task))))
	return k
}

// usage is the job's cpu.stat usage in ns (task directory given).
func usage(task string) uint64 {
	b, _ := os.ReadFile(filepath.Join(filepath.Dir(filepath.Dir(filepath.Dir(task))), "cpu.stat"))
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "usage_usec "); ok {
			n, _ := strconv.ParseUint(v, 10, 64)
			return n * 1000
		}
	}
	return 0
}

func v2Mount() (string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		pre, post, _ := strings.Cut(sc.Text(), " - ")
		if pf := strings.Fields(pre); strings.HasPrefix(post, "cgroup2 ") && len(pf) > 4 {
			return pf[4], nil
		}
	}
	return "", fmt.Errorf("no cgroup2 mount")
}

func sum(v []uint64) (s uint64) {
	for _, x := range v {
		s += x
	}
	return s
}

func jobID() string {
	var b [4]byte
	rand.Read(b[:])
	return strconv.FormatUint(4_000_000_000+uint64(binary.LittleEndian.Uint32(b[:])%100_000_000), 10)
}

// sluid makes a name as Slurm's sluid2str does: 's' and 13 characters of
// Crockford's base-32 alphabet.
func sluid() string {
	const alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
	b := make([]byte, 13)
	rand.Read(b)
	for i := range b {
		b[i] = alphabet[b[i]%32]
	}
	return "s" + string(b)
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}
