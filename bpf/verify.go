// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bpf

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/cilium/ebpf"
)

// ProgramCheck is the verifier's answer for one program loaded alone.
type ProgramCheck struct {
	Name  string
	Err   error // nil: accepted
	Insns int   // instructions the verifier processed (0 if unknown)
}

// CheckPrograms loads every program of the object one at a time, configured
// as Load would configure it (v1Subsys picks the v1 branch), against fresh
// unpinned maps, and attaches nothing: which programs this kernel accepts,
// whatever the feature probes say. A map the kernel refuses (task storage
// before 5.11) fails the programs that use it, with the map's error. err is
// for what stops every program (the constants' maps).
func CheckPrograms(v1Subsys string) ([]ProgramCheck, error) {
	o := &Objects{cfg: Config{MaxJobs: 64, V2JobLevel: 3, V1Subsys: v1Subsys, V1JobLevel: 3}}
	spec, err := o.spec()
	if err != nil {
		return nil, err
	}
	repl := map[string]*ebpf.Map{}
	defer func() {
		for _, m := range repl {
			m.Close()
		}
	}()
	data := &ebpf.CollectionSpec{Maps: map[string]*ebpf.MapSpec{}, Variables: spec.Variables, Types: spec.Types, ByteOrder: spec.ByteOrder}
	refused := map[string]error{}
	for name, ms := range spec.Maps {
		if !pinned(name) {
			data.Maps[name] = ms
			continue
		}
		m, err := ebpf.NewMap(ms)
		if err != nil {
			refused[name] = err
			continue
		}
		repl[name] = m
	}
	// Programs are loaded without the refused maps: those that use one
	// fail on it, the others get their own answer.
	spec = spec.Copy()
	for name := range refused {
		delete(spec.Maps, name)
	}
	dc, err := ebpf.NewCollection(data)
	if err != nil {
		return nil, err
	}
	maps.Copy(repl, dc.Maps)
	dc.Maps = nil
	var out []ProgramCheck
	for _, name := range slices.Sorted(maps.Keys(spec.Programs)) {
		progs, err := loadPrograms(spec, repl, name)
		for m, merr := range refused {
			if err != nil && strings.Contains(err.Error(), m) {
				err = fmt.Errorf("needs map %s, which the kernel refused: %w", m, merr)
			}
		}
		c := ProgramCheck{Name: name, Err: err}
		if p := progs[name]; p != nil {
			if info, err := p.Info(); err == nil {
				n, _ := info.VerifiedInstructions()
				c.Insns = int(n)
			}
			p.Close()
		}
		out = append(out, c)
	}
	return out, nil
}
