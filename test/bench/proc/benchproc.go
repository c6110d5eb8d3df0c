// SPDX-License-Identifier: Apache-2.0

// Package benchproc holds what the benchmark commands that run the real
// binary share: a free listen address, one scrape over HTTP, and the
// process's resident memory and CPU time.
package benchproc

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// FreeAddr returns a 127.0.0.1 address nothing listens on.
func FreeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// Scrape gets url and returns the body; a status other than 200 is an error.
func Scrape(url string) ([]byte, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("status %d", resp.StatusCode)
	}
	return b, err
}

// Memory reads a process's VmRSS and VmHWM, and RssAnon: the part of RSS
// that is not the mapped executable and libraries, in MiB.
func Memory(pid int) (rss, hwm, anon float64) {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) >= 2 {
			kb, _ := strconv.ParseFloat(f[1], 64)
			switch f[0] {
			case "VmRSS:":
				rss = kb / 1024
			case "VmHWM:":
				hwm = kb / 1024
			case "RssAnon:":
				anon = kb / 1024
			}
		}
	}
	return
}

// CPUTime is the user+system CPU time the process used so far: per scrape,
// it is the exporter's own cost, which other load on a shared machine
// disturbs far less than the wall-clock time.
func CPUTime(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / 100 // USER_HZ
}

// ThreadsCPU is the CPU time of the process's threads alive now, from
// their schedstat in nanoseconds: CPUTime's 10 ms ticks cannot see one
// short piece of work, such as one heap release.
func ThreadsCPU(pid int) time.Duration {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	ents, _ := os.ReadDir(dir)
	var sum time.Duration
	for _, e := range ents {
		b, err := os.ReadFile(dir + "/" + e.Name() + "/schedstat")
		if f := strings.Fields(string(b)); err == nil && len(f) > 0 {
			ns, _ := strconv.ParseInt(f[0], 10, 64)
			sum += time.Duration(ns)
		}
	}
	return sum
}
