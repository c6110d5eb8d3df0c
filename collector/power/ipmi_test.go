// SPDX-License-Identifier: Apache-2.0

package power

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jobscope/jobscope/collector"
	"github.com/jobscope/jobscope/collector/collectortest"
	"github.com/jobscope/jobscope/internal/testutil"
	"github.com/jobscope/jobscope/power"
)

// fakeIPMIDevice answers every request with resp (nil: never answers).
type fakeIPMIDevice struct {
	resp  []byte
	reply chan power.IPMIMessage
}

func (f *fakeIPMIDevice) Send(msgid int64, netfn, cmd byte, data []byte) error {
	if f.resp != nil {
		f.reply <- power.IPMIMessage{RecvType: power.RecvTypeResponse, MsgID: msgid, NetFn: netfn | 1, Cmd: cmd, Data: f.resp}
	}
	return nil
}

func (f *fakeIPMIDevice) Receive(ctx context.Context) (power.IPMIMessage, error) {
	select {
	case m := <-f.reply:
		return m, nil
	case <-ctx.Done():
		return power.IPMIMessage{}, power.ErrIPMITimeout
	}
}

func (f *fakeIPMIDevice) Close() error { return nil }

// fakeBMCOpen opens a fake device answering resp, or fails with openErr.
func fakeBMCOpen(resp []byte, openErr error) func(string) (power.IPMIDevice, error) {
	return func(p string) (power.IPMIDevice, error) {
		if openErr != nil {
			return nil, &fs.PathError{Op: "open", Path: p, Err: openErr}
		}
		return &fakeIPMIDevice{resp: resp, reply: make(chan power.IPMIMessage, 1)}, nil
	}
}

func inbandHex(t *testing.T, name string) []byte {
	return testutil.HexFile(t, filepath.Join("..", "..", "testdata", "power", "ipmi", name))
}

// TestPowerIPMIInBandGolden: a BMC answering in-band with the figures of
// the saved ipmi-dcmi output gives exactly the command path's golden.
func TestPowerIPMIInBandGolden(t *testing.T) {
	c, root, now, gpus := powerFixture(t, Options{IdlePolicy: "capacity", Factor: 56, Country: "DE"})
	pc := c.(*powerCollector)
	opts := pc.opts
	opts.IPMIMode, opts.IPMICommand = IPMIAuto, ""
	opts.IPMIOpen = fakeBMCOpen(inbandHex(t, "inband-good.hex"), nil)
	c, logs := powerWithLogs(t, pc, opts)
	var err error
	problems := collector.NewProblems(nil)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(powerScrape{c: c, jobs: powerJobs(root), problems: problems, gpus: gpus, err: &err})
	if _, gerr := reg.Gather(); gerr != nil || err != nil {
		t.Fatalf("scrape 1: %v %v", gerr, err)
	}
	testutil.CopyTree(t, "../../testdata/power/node/scrape2", root)
	*now = now.Add(10 * time.Second)
	got := testutil.Exposition(t, reg)
	want, rerr := os.ReadFile(filepath.Join("..", "..", "testdata", "power", "metrics-capacity.golden"))
	if err != nil || rerr != nil || string(got) != string(want) {
		t.Fatalf("in-band output differs from metrics-capacity.golden (err %v %v):\n%s", err, rerr, got)
	}
	if !strings.Contains(logs.String(), "read in-band") || strings.Count(logs.String(), "\n") != 1 {
		t.Fatalf("logs: %s", logs.String())
	}
	if n := problems.Count("power", "ipmi_inband"); n != 0 {
		t.Fatalf("%v in-band problems", n)
	}
}

// TestPowerIPMISources: which path answers, what is logged (once), and
// that the collector stays whole (RAPL series) whatever IPMI does.
func TestPowerIPMISources(t *testing.T) {
	good := inbandHex(t, "inband-good.hex")
	for _, tc := range []struct {
		name       string
		mode       string
		command    bool
		resp       []byte
		openErr    error
		wantIPMI   bool
		wantLog    string // in the single log line
		wantLogs   int
		wantCause  string
		wantNoData bool
	}{
		{name: "absent, command", mode: IPMIAuto, command: true, openErr: fs.ErrNotExist, wantIPMI: true, wantLog: "using --collector.power.ipmi-command", wantLogs: 1},
		{name: "absent, no command", mode: IPMIAuto, openErr: fs.ErrNotExist, wantLog: "ipmi_devintf", wantLogs: 1},
		{name: "denied, no command", mode: IPMIAuto, openErr: fs.ErrPermission, wantLog: "CAP_DAC_OVERRIDE", wantLogs: 1},
		{name: "denied, command", mode: IPMIAuto, command: true, openErr: fs.ErrPermission, wantIPMI: true, wantLog: "SupplementaryGroups=ipmi", wantLogs: 1},
		{name: "inband, absent, command unused", mode: IPMIInBand, command: true, openErr: fs.ErrNotExist, wantLog: "no IPMI series", wantLogs: 1},
		{name: "no DCMI, falls back", mode: IPMIAuto, command: true, resp: []byte{0xC1}, wantIPMI: true, wantLog: "refuses", wantLogs: 2},
		{name: "no DCMI, inband only", mode: IPMIInBand, command: true, resp: []byte{0xC1}, wantLogs: 1, wantCause: "ipmi_inband"},
		{name: "hang", mode: IPMIAuto, resp: nil, wantLogs: 1, wantCause: "ipmi_inband"},
		{name: "command mode ignores device", mode: IPMICommand, command: true, resp: good, wantIPMI: true},
		{name: "off", mode: IPMIOff, command: true, resp: good},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, root, _, gpus := powerFixture(t, Options{})
			pc := c.(*powerCollector)
			opts := pc.opts
			opts.IPMIMode = tc.mode
			if !tc.command {
				opts.IPMICommand = ""
			}
			// Only the hanging BMC has to run into the timeout; everything
			// else (a spawned ipmi command included) gets room to answer on
			// a loaded CI machine.
			opts.IPMITimeout = 5 * time.Second
			if tc.name == "hang" {
				opts.IPMITimeout = 50 * time.Millisecond
			}
			opts.IPMIOpen = fakeBMCOpen(tc.resp, tc.openErr)
			c, logs := powerWithLogs(t, pc, opts)
			problems := collector.NewProblems(nil)
			ms, err := powerCollectOnce(c, root, problems, gpus)
			if err != nil {
				t.Fatalf("collect: %v", err)
			}
			ipmi, rapl := 0, 0
			for _, m := range ms {
				s := m.Desc().String()
				if isMetric(s, "jobscope_ipmi_power_watts") {
					ipmi++
				}
				if isMetric(s, "jobscope_rapl_package_joules_total") {
					rapl++
				}
			}
			if (ipmi == 4) != tc.wantIPMI || rapl != 2 {
				t.Fatalf("ipmi series %d (want them: %v), rapl %d", ipmi, tc.wantIPMI, rapl)
			}
			if n := strings.Count(logs.String(), "\n"); n != tc.wantLogs || !strings.Contains(logs.String(), tc.wantLog) {
				t.Fatalf("%d log lines, want %d with %q:\n%s", n, tc.wantLogs, tc.wantLog, logs.String())
			}
			for _, cause := range []string{"ipmi_inband", "ipmi_command"} {
				want := 0.0
				if cause == tc.wantCause {
					want = 1
				}
				if n := problems.Count("power", cause); n != want {
					t.Errorf("problem %s: %v, want %v", cause, n, want)
				}
			}
		})
	}
}

// powerWithLogs rebuilds pc's collector with opts, logging into the
// returned buffer.
func powerWithLogs(t *testing.T, pc *powerCollector, opts Options) (collector.Collector, *bytes.Buffer) {
	t.Helper()
	logs := &bytes.Buffer{}
	env := *pc.env
	env.Logger = slog.New(slog.NewTextHandler(logs, nil))
	c, err := New(&env, opts)
	if err != nil {
		t.Fatal(err)
	}
	return c, logs
}

func TestPowerIPMIBadOptions(t *testing.T) {
	env := &collector.Env{SysFS: t.TempDir(), ProcFS: t.TempDir()}
	for name, o := range map[string]Options{
		"unknown mode":        {IdlePolicy: "capacity", IPMIMode: "bmc"},
		"command without one": {IdlePolicy: "capacity", IPMIMode: IPMICommand},
	} {
		if _, err := New(env, o); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// No device and nothing else: not an error, the collector says ErrNoData.
	o := Options{IdlePolicy: "capacity", IPMIMode: IPMIAuto, IPMIOpen: fakeBMCOpen(nil, fs.ErrNotExist)}
	c, err := New(env, o)
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan prometheus.Metric, 16)
	if err := c.Collect(collectortest.Scrape(context.Background(), "power", nil, collector.NewProblems(nil)), ch); !errors.Is(err, collector.ErrNoData) {
		t.Fatalf("want ErrNoData, got %v", err)
	}
}
