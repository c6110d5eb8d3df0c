// SPDX-License-Identifier: Apache-2.0

//go:build !linux

package bpf

import (
	"errors"
	"log/slog"
)

// V1 subsystems the programs can key jobs by.
const (
	V1None    = ""
	V1Cpuacct = "cpuacct"
	V1Memory  = "memory"
)

// Config says how to load and attach the programs (Linux only).
type Config struct {
	PinPath                string
	MaxJobs                uint32
	V2JobLevel, V1JobLevel uint32
	V1Subsys, CgroupV2     string
	Stats                  bool
	Features               Features
	Log                    *slog.Logger
}

// Objects are never loaded off Linux.
type Objects struct{}

var errNotLinux = errors.New("ebpf unsupported: not Linux")

func Load(Config) (*Objects, error)       { return nil, errNotLinux }
func (*Objects) Read() (*Snapshot, error) { return nil, errNotLinux }
func (*Objects) Close() error             { return nil }
func (*Objects) NetworkErr() error        { return errNotLinux }
func (*Objects) LiveErr() error           { return errNotLinux }
func (*Objects) Reused() bool             { return false }
func (*Objects) Attached() int            { return 0 }
