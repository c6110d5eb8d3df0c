// SPDX-License-Identifier: Apache-2.0

package flagval

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func TestChecks(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing")
	for _, c := range []struct {
		name  string
		check func(string) error
		good  []string
		bad   []string
	}{
		{"Dir", Dir, []string{dir}, []string{missing, file, ""}},
		{"File", File, []string{file}, []string{missing, dir}},
		{"Exists", Exists, []string{file, dir}, []string{missing}},
		{"DirLater", DirLater, []string{dir, missing}, []string{file}},
		{"Abs", Abs, []string{missing}, []string{"rel/x", ""}},
		{"Command", Command, []string{file, file + " -x", "sh"}, []string{missing, "", "no-such-command-anywhere"}},
		{"ListenAddress", ListenAddress, []string{":10817", "127.0.0.1:0", "[::1]:80", "host:http", "vsock://:1024"},
			[]string{"localhost", "a:b:c", ":99999", "ho st:80", "vsock://:x"}},
		{"HTTPURL", HTTPURL, []string{"http://proxy:8080/x", "https://api.example"}, []string{"http://%zz", "ftp://x", "proxy:8080", "/path"}},
		{"HTTPPath", HTTPPath, []string{"/", "/metrics", "/a/b/", "/a:b@c"},
			[]string{"metrics", "", "/a b", "/{x}", "/a/../b", "//x", "/a/./b", "GET /x", "/\x00"}},
		{"Optional(Dir)", Optional(Dir), []string{"", dir}, []string{missing}},
		{"Each(Dir)", Each(Dir), []string{"", dir, dir + "," + dir}, []string{dir + "," + missing, ","}},
	} {
		for _, v := range c.good {
			if err := c.check(v); err != nil {
				t.Errorf("%s(%q): %v", c.name, v, err)
			}
		}
		for _, v := range c.bad {
			err := c.check(v)
			if err == nil {
				t.Errorf("%s(%q) accepted", c.name, v)
			} else if strings.Contains(err.Error(), "\n") {
				t.Errorf("%s(%q): a message of several lines: %q", c.name, v, err)
			}
		}
	}
}

// Check keeps the flag's own type and getters: only the check is added.
func TestCheckWrapsPflagValue(t *testing.T) {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs.StringSlice("names", nil, "")
	Check(fs, "names", Each(func(s string) error {
		if s == "bad" {
			return os.ErrInvalid
		}
		return nil
	}))
	if err := fs.Parse([]string{"--names=a,b", "--names=c"}); err != nil {
		t.Fatal(err)
	}
	if got, err := fs.GetStringSlice("names"); err != nil || strings.Join(got, ",") != "a,b,c" {
		t.Errorf("GetStringSlice: %v, %v", got, err)
	}
	err := fs.Parse([]string{"--names=a,bad"})
	if err == nil || !strings.Contains(err.Error(), `"--names"`) {
		t.Errorf("bad element: %v", err)
	}
	var d time.Duration
	Duration(fs, &d, "d", time.Second, 1, "")
	if err := fs.Parse([]string{"--d=-1s"}); err == nil {
		t.Error("negative duration accepted")
	}
}
