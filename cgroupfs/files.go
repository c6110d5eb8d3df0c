// SPDX-License-Identifier: Apache-2.0

package cgroupfs

import (
	"errors"
	"os"
)

// Files reads the interface files of one job's cgroup directories during
// one scrape. It keeps each directory open while the job is read (files
// are opened relative to it), and sorts failures: a job that ended
// mid-scrape and a file the kernel does not provide are silent; an
// unreadable or malformed file goes to report, with a cause:
// permission_denied, read_failed or malformed_file.
type Files struct {
	r      *Reader
	report func(cause string, err error)
	dirs   []Dir
	dirBuf [4]Dir // a job's directories: one on v2, one per controller on v1
	// Gone is set once the job's cgroup has vanished: stop quietly.
	Gone bool
	// Problems collects what is reported when report is nil.
	Problems []Problem
}

// Problem is a file that could not be read or parsed, with its cause.
type Problem struct {
	Cause string
	Err   error
}

// NewFiles starts reading one job through r (not safe for concurrent
// use); report gets each problem (nil: they are kept in Problems).
func NewFiles(r *Reader, report func(cause string, err error)) *Files {
	f := &Files{r: r, report: report}
	f.dirs = f.dirBuf[:0]
	return f
}

// Collect runs fn with the problems it meets kept, not reported, and
// returns them.
func (f *Files) Collect(fn func()) []Problem {
	report, kept := f.report, len(f.Problems)
	f.report = nil
	fn()
	f.report = report
	out := f.Problems[kept:]
	f.Problems = f.Problems[:kept]
	return out
}

func (f *Files) problem(cause string, err error) {
	if f.report == nil {
		f.Problems = append(f.Problems, Problem{cause, err})
		return
	}
	f.report(cause, err)
}

// FileError is a file whose content is not what the kernel writes.
type FileError struct{ Path, Why string }

func (e *FileError) Error() string { return e.Path + ": " + e.Why }

// dir returns the open directory for path, opening it on first use; a job
// directory that cannot be opened because it is gone ends the job.
func (f *Files) dir(path string) (Dir, bool) {
	for _, d := range f.dirs {
		if d.Path() == path {
			return d, true
		}
	}
	d, err := f.r.OpenDir(path)
	if err != nil {
		f.fail(err, true)
		return d, false
	}
	f.dirs = append(f.dirs, d)
	return d, true
}

// Close releases the job's open directories.
func (f *Files) Close() {
	for _, d := range f.dirs {
		d.Close()
	}
	f.dirs = f.dirs[:0]
}

func (f *Files) fail(err error, isDir bool) {
	switch {
	case Gone(err):
		if isDir {
			f.Gone = true
		}
	case errors.Is(err, os.ErrPermission):
		f.problem("permission_denied", err)
	default:
		f.problem("read_failed", err)
	}
}

// Read returns a file's content, or nil when it is absent (the kernel or
// the controller does not provide it), gone, or unreadable (reported). The
// slice is valid until the next read.
func (f *Files) Read(dir, name string) []byte {
	if f.Gone || dir == "" {
		return nil
	}
	d, ok := f.dir(dir)
	if !ok {
		return nil
	}
	b, err := f.r.ReadIn(d, name)
	if err == nil {
		return b
	}
	if Gone(err) {
		// An absent file is a kernel without it; a removed directory is a
		// job that ended mid-scrape. Both are silent.
		f.Gone = d.Removed()
		return nil
	}
	f.fail(err, false)
	return nil
}

// Malformed reports a file whose content did not parse.
func (f *Files) Malformed(dir, name string, err error) {
	f.problem("malformed_file", &FileError{Path: dir + "/" + name, Why: err.Error()})
}

// Uint reads a file holding one number (false: absent, gone or bad).
func (f *Files) Uint(dir, name string) (uint64, bool) {
	b := f.Read(dir, name)
	if b == nil {
		return 0, false
	}
	v, err := ParseUint(b)
	if err != nil {
		f.Malformed(dir, name, err)
		return 0, false
	}
	return v, true
}

// CPUList reads a cpuset file (false: absent, gone or bad; an empty set
// is a set).
func (f *Files) CPUList(dir, name string) ([]int, bool) {
	b := f.Read(dir, name)
	if b == nil {
		return nil, false
	}
	cpus, err := ParseCPUList(b)
	if err != nil {
		f.Malformed(dir, name, err)
		return nil, false
	}
	return cpus, true
}
