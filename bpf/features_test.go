// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bpf

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// forced is the running kernel with one answer replaced: how the loader
// behaves on a kernel without that feature, without booting one.
type forced struct {
	kernelFeatures
	btf, taskStorage, live error
}

func (f forced) BTF() error {
	if f.btf != nil {
		return f.btf
	}
	return f.kernelFeatures.BTF()
}

func (f forced) TaskStorage() error {
	if f.taskStorage != nil {
		return f.taskStorage
	}
	return f.kernelFeatures.TaskStorage()
}

func (f forced) LiveCPU() error {
	if f.live != nil {
		return f.live
	}
	return f.kernelFeatures.LiveCPU()
}

// TestKernelFeaturesHere: the host kernel (6.18) has every feature; a
// probe that fails here would turn the collector off on every site.
func TestKernelFeaturesHere(t *testing.T) {
	needRoot(t)
	k := kernelFeatures{}
	for name, probe := range map[string]func() error{"BTF": k.BTF, "TaskStorage": k.TaskStorage, "LiveCPU": k.LiveCPU} {
		if err := probe(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// Without BTF or task storage nothing loads, nothing is pinned, and the
// error says what is missing and what is lost.
func TestLoadWithoutCoreFeature(t *testing.T) {
	needRoot(t)
	for _, tc := range []struct {
		f     forced
		cause string
		says  string
	}{
		{forced{btf: errors.New("the kernel has no BTF (forced)")}, "no_btf", "no BTF"},
		{forced{taskStorage: errors.New("tracing programs cannot use task storage (kernel 5.12+) (forced)")}, "unsupported", "task storage"},
	} {
		pin := filepath.Join("/sys/fs/bpf", "jobscope_test_"+randomJobID(t))
		o, err := Load(Config{PinPath: pin, MaxJobs: 8, V2JobLevel: 3, Features: tc.f})
		if err == nil {
			o.Close()
			t.Fatalf("%s: loaded", tc.cause)
		}
		var le *LoadError
		if !errors.As(err, &le) || le.Cause != tc.cause {
			t.Errorf("got %v, want cause %s", err, tc.cause)
		}
		for _, want := range []string{tc.says, "no eBPF counters", "/proc/<pid>/io"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %q does not say %q", tc.cause, err, want)
			}
		}
		if _, err := os.Stat(pin); err == nil {
			os.Remove(pin)
			t.Errorf("%s: pin directory made although nothing loaded", tc.cause)
		}
		t.Logf("logged: %v", err)
	}
}

// Without what fold_running needs, account_switch_plain counts CPU and IO
// at switch-out: exact once tasks have left their CPU, and LiveErr says what
// is lost.
func TestLoadWithoutLiveCPU(t *testing.T) {
	needRoot(t)
	_, cpu := twoCPUs(t)
	v2, _ := mounts(t)
	if v2 == "" {
		t.Skip("no cgroup v2 mount")
	}
	o, err := Load(Config{MaxJobs: 64, V2JobLevel: 3, CgroupV2: v2,
		Features: forced{live: errors.New("no bpf_map_lookup_percpu_elem (kernel 5.19+) (forced)")}})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if o.LiveErr() == nil || !strings.Contains(o.LiveErr().Error(), "counted when it leaves") {
		t.Errorf("LiveErr = %v, want the forced cause and what is lost", o.LiveErr())
	}
	if o.fold != nil || o.progs[jobscopeProgAccountSwitch] != nil || o.progs[jobscopeProgAccountSwitchPlain] == nil {
		t.Errorf("programs loaded: %v, want account_switch_plain and no fold_running", o.progs)
	}
	if o.Attached() != 6 {
		t.Errorf("%d programs attached, want 6 (2 CPU/IO + 4 network)", o.Attached())
	}
	job := newV2Job(t, v2)
	key, _ := DirKey(0, job.jobDir[""])
	h := startHelper(t, "burn", cpu)
	job.enter(h)
	h.start("300ms")
	h.wait()
	time.Sleep(50 * time.Millisecond)
	snap, err := o.Read()
	if err != nil {
		t.Fatal(err)
	}
	if snap.Jobs[key] == nil {
		t.Fatal("job not counted")
	}
	closeToUsage(t, "cpu ns vs cpu.stat", sum(snap.Jobs[key].CPUNs), usageUsec(t, job.jobDir[""])*1000, 0.0001)
}
