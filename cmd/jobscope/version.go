// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/jobscope/jobscope/gpu"
)

// versionLine says which build this is next to the version: the static
// package (no cgo) has no GPU support, and its users must be able to tell.
func versionLine() string {
	return fmt.Sprintf("jobscope %s (revision %s, %s/%s, %s)", version, revision, runtime.GOOS, runtime.GOARCH, flavour())
}

func flavour() string {
	var backends []string
	if gpu.NVMLBuilt {
		backends = append(backends, "NVML")
	}
	if gpu.DCGMBuilt {
		backends = append(backends, "DCGM")
	}
	link := "static"
	if cgoBuild() {
		link = "cgo"
	}
	if len(backends) == 0 {
		return link + ", no GPU support"
	}
	return link + ", GPU support: " + strings.Join(backends, ", ")
}

// cgoBuild reads the build settings Go records in every binary, so no
// file per build tag is needed.
func cgoBuild() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "CGO_ENABLED" {
			return s.Value == "1"
		}
	}
	return false
}
