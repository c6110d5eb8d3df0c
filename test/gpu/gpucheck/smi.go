// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// smiSample is one nvidia-smi reading: the ground truth jobscope is held to.
type smiSample struct {
	At      time.Time
	PowerW  float64 // power.draw.instant where the driver has it, else power.draw
	Util    float64 // percent
	MemMiB  float64
	SMClock float64 // MHz
	TempC   float64
}

// smiSampler runs `nvidia-smi -lms` and keeps every sample.
type smiSampler struct {
	cmd     *exec.Cmd
	mu      sync.Mutex
	samples []smiSample
	Query   string
}

func startSMI(periodMs int) (*smiSampler, error) {
	for _, q := range []string{
		"timestamp,power.draw.instant,utilization.gpu,memory.used,clocks.sm,temperature.gpu",
		"timestamp,power.draw,utilization.gpu,memory.used,clocks.sm,temperature.gpu",
	} {
		// A query field the driver does not know fails at once.
		if err := exec.Command("nvidia-smi", "--query-gpu="+q, "--format=csv,noheader,nounits").Run(); err != nil {
			continue
		}
		s := &smiSampler{Query: q}
		s.cmd = exec.Command("nvidia-smi", "--query-gpu="+q, "--format=csv,noheader,nounits", "-lms", strconv.Itoa(periodMs))
		out, err := s.cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		if err := s.cmd.Start(); err != nil {
			return nil, err
		}
		go s.read(bufio.NewScanner(out))
		return s, nil
	}
	return nil, exec.ErrNotFound
}

func (s *smiSampler) read(sc *bufio.Scanner) {
	for sc.Scan() {
		f := strings.Split(sc.Text(), ",")
		if len(f) < 6 {
			continue
		}
		at, err := time.ParseInLocation("2006/01/02 15:04:05.000", strings.TrimSpace(f[0]), time.Local)
		if err != nil {
			continue
		}
		num := func(i int) float64 {
			v, _ := strconv.ParseFloat(strings.TrimSpace(f[i]), 64)
			return v
		}
		s.mu.Lock()
		s.samples = append(s.samples, smiSample{At: at, PowerW: num(1), Util: num(2), MemMiB: num(3), SMClock: num(4), TempC: num(5)})
		s.mu.Unlock()
	}
}

func (s *smiSampler) stop() {
	if s != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Kill() // nvidia-smi gone already: Wait says so
		_ = s.cmd.Wait()
	}
}

// between returns the samples taken in [a, b].
func (s *smiSampler) between(a, b time.Time) []smiSample {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []smiSample
	for _, x := range s.samples {
		if !x.At.Before(a) && !x.At.After(b) {
			out = append(out, x)
		}
	}
	return out
}

// energy integrates power over [a, b] with the trapezoid rule.
func (s *smiSampler) energy(a, b time.Time) (joules float64, n int) {
	xs := s.between(a, b)
	for i := 1; i < len(xs); i++ {
		dt := xs[i].At.Sub(xs[i-1].At).Seconds()
		joules += dt * (xs[i].PowerW + xs[i-1].PowerW) / 2
	}
	if len(xs) >= 2 {
		// The samples cover slightly less than [a, b]: scale to the window.
		span := xs[len(xs)-1].At.Sub(xs[0].At).Seconds()
		if span > 0 {
			joules *= b.Sub(a).Seconds() / span
		}
	}
	return joules, len(xs)
}
