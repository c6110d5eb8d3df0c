// SPDX-License-Identifier: Apache-2.0

package power

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jobscope/jobscope/internal/poll"
)

// TestMain lets the test binary play a fake ipmi-dcmi: RunCommand then
// execs this binary directly (no shell), as it would exec the real tool.
func TestMain(m *testing.M) {
	if len(os.Args) == 3 && os.Args[1] == "fake-ipmi-dcmi" {
		fakeIPMI(os.Args[2])
		return
	}
	os.Exit(m.Run())
}

func fakeIPMI(mode string) {
	good, _ := os.ReadFile("../testdata/power/ipmi/good.txt")
	switch mode {
	case "good":
		os.Stdout.Write(good)
	case "garbage":
		b, _ := os.ReadFile("../testdata/power/ipmi/garbage.txt")
		os.Stdout.Write(b)
	case "fail":
		fmt.Fprintln(os.Stderr, "ipmi_ctx_open_inband: driver timeout")
		os.Exit(1)
	case "slow":
		time.Sleep(1500 * time.Millisecond)
		os.Stdout.Write(good)
	case "hang":
		time.Sleep(time.Minute)
	}
	os.Exit(0)
}

func fakeArgv(mode string) []string { return []string{os.Args[0], "fake-ipmi-dcmi", mode} }

func TestParseDCMI(t *testing.T) {
	b, _ := os.ReadFile("../testdata/power/ipmi/good.txt")
	d, err := ParseDCMI(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	want := DCMIReading{Current: 220, Minimum: 68, Maximum: 480, Average: 218, PeriodSeconds: 1}
	if d != want {
		t.Fatalf("got %+v want %+v", d, want)
	}
}

func TestParseDCMIBad(t *testing.T) {
	for file, want := range map[string]error{"garbage.txt": ErrNoReading, "not-active.txt": ErrNotActive} {
		b, _ := os.ReadFile("../testdata/power/ipmi/" + file)
		if _, err := ParseDCMI(bytes.NewReader(b)); !errors.Is(err, want) {
			t.Errorf("%s: got %v want %v", file, err, want)
		}
	}
	if _, err := ParseDCMI(strings.NewReader("")); !errors.Is(err, ErrNoReading) {
		t.Errorf("empty: got %v", err)
	}
}

func FuzzParseDCMI(f *testing.F) {
	for _, n := range []string{"good.txt", "garbage.txt", "not-active.txt"} {
		b, _ := os.ReadFile("../testdata/power/ipmi/" + n)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := ParseDCMI(bytes.NewReader(b))
		if err == nil && (d.Current < 0 || d.Current > 1<<32) {
			t.Fatalf("impossible reading %+v", d)
		}
	})
}

func ipmiPoller(mode string, timeout time.Duration) *poll.Poller[DCMIReading] {
	return newPoller(func(ctx context.Context) (DCMIReading, error) {
		out, err := RunCommand(ctx, fakeArgv(mode), timeout)
		if err != nil {
			return DCMIReading{}, err
		}
		return ParseDCMI(bytes.NewReader(out))
	}, time.Hour, timeout, nil)
}

func TestIPMICommandGood(t *testing.T) {
	p := ipmiPoller("good", 30*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d, _, ok, err := get(ctx, p)
	if err != nil || !ok || d.Current != 220 {
		t.Fatalf("got %+v ok=%v err=%v", d, ok, err)
	}
	// Within the interval the cached value comes back and nothing runs.
	if _, _, ok, _ := get(ctx, p); !ok || p.Runs() != 1 {
		t.Fatalf("ok=%v runs=%d, want a cached value and one run", ok, p.Runs())
	}
}

func TestIPMICommandGarbageAndFailure(t *testing.T) {
	for _, mode := range []string{"garbage", "fail"} {
		p := ipmiPoller(mode, 30*time.Second)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, _, ok, err := get(ctx, p)
		cancel()
		if ok || err == nil {
			t.Errorf("%s: ok=%v err=%v, want no value and an error", mode, ok, err)
		}
		if mode == "fail" && !strings.Contains(fmt.Sprint(err), "driver timeout") {
			t.Errorf("fail: error %v should carry stderr", err)
		}
	}
}

// TestIPMICommandTimeout: a hung BMC tool is killed at the timeout.
func TestIPMICommandTimeout(t *testing.T) {
	p := ipmiPoller("hang", 500*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, _, ok, err := get(ctx, p)
	if ok || !errors.Is(err, ErrTimeout) {
		t.Fatalf("ok=%v err=%v, want ErrTimeout", ok, err)
	}
}

// TestIPMICommandSlow: a BMC slower than the scrape deadline does not hold
// the scrape; its answer serves the next scrape, and it ran once.
func TestIPMICommandSlow(t *testing.T) {
	p := ipmiPoller("slow", 30*time.Second)
	short, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	_, _, ok, _ := get(short, p)
	cancel()
	if ok {
		t.Skip("the slow fake answered within 10ms: machine too fast to show the case")
	}
	var d DCMIReading
	for i := 0; i < 300 && !ok; i++ { // bounded: up to ~30 s
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		d, _, ok, _ = get(ctx, p)
		cancel()
	}
	if !ok || d.Current != 220 || p.Runs() != 1 {
		t.Fatalf("got %+v ok=%v runs=%d", d, ok, p.Runs())
	}
}
