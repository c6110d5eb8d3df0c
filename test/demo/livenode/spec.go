// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// spec is live.txt: the fixture's reference time, its jobs, the files whose
// start times shift, and the RAPL zones' draws.
type spec struct {
	reference int64
	jobs      []job
	starts    []string
	zones     []zone
}

type job struct {
	dir   string
	start int64
}

type zone struct {
	zone  string
	watts float64
}

func readSpec(path string) (*spec, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	s := &spec{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if err := s.add(strings.Fields(line)); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if s.reference == 0 {
		return nil, fmt.Errorf("%s: no reference time", path)
	}
	for _, j := range s.jobs {
		if j.start >= s.reference {
			return nil, fmt.Errorf("%s: job %s starts at or after the reference time", path, j.dir)
		}
	}
	return s, nil
}

func (s *spec) add(f []string) error {
	switch {
	case f[0] == "reference" && len(f) == 2:
		v, err := strconv.ParseInt(f[1], 10, 64)
		s.reference = v
		return err
	case f[0] == "job" && len(f) == 3:
		v, err := strconv.ParseInt(f[2], 10, 64)
		s.jobs = append(s.jobs, job{dir: f[1], start: v})
		return err
	case f[0] == "start" && len(f) == 2:
		s.starts = append(s.starts, f[1])
		return nil
	case f[0] == "rapl" && len(f) == 3:
		v, err := strconv.ParseFloat(f[2], 64)
		s.zones = append(s.zones, zone{zone: f[1], watts: v})
		return err
	}
	return fmt.Errorf("cannot read %q", strings.Join(f, " "))
}
