// SPDX-License-Identifier: Apache-2.0

package gpu

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzRefsFromEnviron feeds /proc/<pid>/environ contents through the GPU
// variable parser and the reference resolver.
func FuzzRefsFromEnviron(f *testing.F) {
	for _, s := range []string{
		"SLURM_JOB_ID=40\x00SLURM_STEP_GPUS=0,1\x00CUDA_VISIBLE_DEVICES=0,1\x00",
		"SLURM_JOB_GPUS=2\x00CUDA_VISIBLE_DEVICES=GPU-bbbb0000-0000-0000-0000-000000000002\x00",
		"CUDA_VISIBLE_DEVICES=MIG-GPU-cccc0000-0000-0000-0000-000000000003/2/0\x00",
		"SLURM_STEP_GPUS=0-3\x00GPU_DEVICE_ORDINAL=NoDevFiles\x00",
		"SLURM_JOB_GPUS=99999999999-0\x00",
	} {
		f.Add([]byte(s))
	}
	ix := newDevIndex(testNode())
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(dir, "environ")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		found := refsFromVars(readGPUVars(p))
		refs := found.usable()
		if len(refs) > 4096 {
			t.Fatalf("%d refs from %d bytes", len(refs), len(b))
		}
		for _, r := range refs {
			ix.resolve(r)
		}
	})
}

// FuzzDevicesList reads v1 devices.list contents.
func FuzzDevicesList(f *testing.F) {
	for _, s := range []string{
		"c 195:255 rw\nc 195:254 rw\nc 195:0 rw\nc 195:1 rw\nc 1:3 rwm\n",
		"a *:* rwm\n",
		"c 195:* m\nb 195:0 r\n",
		"c 195:-1 rw\nc 195:99999999999999999999 rw\n",
	} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(dir, "devices.list")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		st := &mapState{ix: newDevIndex(testNode()), out: map[string]Assignment{}}
		fromDevicesList(st, Job{ID: "1", DevicesList: p})
		for u, a := range st.out {
			if a.JobID != "1" || a.Method != MethodDevicesCgroup || u == "" {
				t.Fatalf("claim %s -> %+v", u, a)
			}
		}
	})
}
