// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// Basic auth from --web.config.file is enforced, and SIGTERM shuts the
// server down cleanly (run returns 0).
func TestBasicAuthAndGracefulShutdown(t *testing.T) {
	hash, err := bcrypt.GenerateFromPassword([]byte("secret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "web.yml")
	_ = os.WriteFile(cfg, []byte(fmt.Sprintf("basic_auth_users:\n  prom: %s\n", hash)), 0o600)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	root := filepath.Join("..", "..", "testdata", "demo")
	done := make(chan int, 1)
	go func() {
		done <- run([]string{"--web.listen-address=" + addr, "--web.config.file=" + cfg, "--log.level=error",
			"--path.cgroupfs=" + filepath.Join(root, "cgroup"), "--path.procfs=" + filepath.Join(root, "proc"),
			"--slurm.scontrol-fallback=false", "--collector.ebpf=false"})
	}()
	url := "http://" + addr + "/metrics"
	var resp *http.Response
	// Up to 20 s for the node to listen (it answers within milliseconds
	// when idle; 5 s was short under -race on a loaded machine).
	for range 400 {
		if resp, err = http.Get(url); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("without credentials: %d, want 401", resp.StatusCode)
	}
	req, _ := http.NewRequest("GET", url, nil)
	req.SetBasicAuth("prom", "secret")
	if resp, err = http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("with credentials: %v %v", resp, err)
	}
	resp.Body.Close()
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d after SIGTERM", code)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no shutdown after SIGTERM")
	}
}
