package collector

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	promtest "github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/jobscope/jobscope/collector/discovery"
	"github.com/jobscope/jobscope/internal/testutil"
)

var fixtureUsers = map[int]string{1001: "alice", 1002: "bob"}

// fixtureOwner stands for the owner of a fixture /proc/<pid>: whoever
// checked the tree out, so it must not decide a job's user.
func fixtureOwner(string) (int, bool) { return 0, true }

func lookupFixtureUser(uid int) (string, error) {
	if n, ok := fixtureUsers[uid]; ok {
		return n, nil
	}
	return "", errors.New("unknown user id")
}

// fixtureExporter builds an exporter with the cgroup collector over a
// fixture node (testdata/<node>/{cgroup,proc,props,sys}).
func fixtureExporter(t testing.TB, node string) (*Exporter, *Problems) {
	t.Helper()
	root := filepath.Join("..", "testdata", node)
	layout, err := discovery.DetectLayout(filepath.Join(root, "cgroup"), "")
	if err != nil {
		t.Fatal(err)
	}
	disc := discovery.New(discovery.Config{
		Layout: layout, ProcFS: filepath.Join(root, "proc"), PropsDir: filepath.Join(root, "props"),
		LookupUser: lookupFixtureUser, ProcOwner: fixtureOwner,
	})
	problems := NewProblems(nil)
	c := NewCgroupCollector(CgroupOptions{SysFS: filepath.Join(root, "sys")})
	exp := NewExporter(map[string]Collector{"cgroup": c}, disc, problems, nil, BuildInfo{Version: "test", Revision: "test", GoVersion: "go"})
	return exp, problems
}

func gatherer(exp *Exporter) prometheus.Gatherer {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(exp.Bind(context.Background()))
	return reg
}

func TestNodeGolden(t *testing.T) {
	for _, node := range []string{"node-v1", "node-v2", "node-v2-sluid"} {
		t.Run(node, func(t *testing.T) {
			exp, _ := fixtureExporter(t, node)
			g := gatherer(exp)
			testutil.Golden(t, filepath.Join("..", "testdata", node, "metrics.golden"), testutil.Exposition(t, g))
			problems, err := promtest.GatherAndLint(g)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range problems {
				t.Errorf("lint: %s: %s", p.Metric, p.Text)
			}
		})
	}
}
