// SPDX-License-Identifier: Apache-2.0

package slurmcli

import (
	"strings"
	"testing"
)

func TestParseSacctmgrUser(t *testing.T) {
	for _, c := range []struct {
		name, in   string
		found, adm bool
		coords     string
		err        bool
	}{
		{"plain", "alice|None|\n", true, false, "", false},
		{"coordinator", "carol|None|chemistry,physics\n", true, false, "chemistry,physics", false},
		{"operator", "op|Operator|\n", true, true, "", false},
		{"admin", "adm|Administrator|\n", true, true, "", false},
		{"unknown", "", false, false, "", false},
		{"other line only", "bob|Administrator|\n", false, false, "", false},
		{"twice", "alice|None|\nalice|Administrator|\n", false, false, "", true},
		{"bad fields", "alice|None\n", false, false, "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			want := strings.SplitN(c.in, "|", 2)[0]
			if c.name == "other line only" || want == "" {
				want = "alice"
			}
			u, ok, err := ParseSacctmgrUser(strings.NewReader(c.in), want)
			if (err != nil) != c.err || ok != c.found || u.Privileged() != c.adm ||
				strings.Join(u.Coordinates, ",") != c.coords {
				t.Fatalf("%+v %v %v", u, ok, err)
			}
		})
	}
}

func TestValidUserName(t *testing.T) {
	for s, want := range map[string]bool{"alice": true, "a.b-c_1": true, "": false, "-x": false,
		"a,b": false, "a b": false, "name=x": false, "ä": false, strings.Repeat("a", 65): false} {
		if ValidUserName(s) != want {
			t.Errorf("%q: %v", s, !want)
		}
	}
}
