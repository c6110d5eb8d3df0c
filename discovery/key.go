// SPDX-License-Identifier: Apache-2.0

package discovery

// Key names a job on this node for its life: its id and its (first)
// cgroup directory's path and inode. A job id reused later gets a new
// directory, so a new key; metadata filled in later (Meta.Key comes with
// it) does not change it. Collectors key what they keep between scrapes
// by it.
type Key struct {
	ID  string
	Dir string
	Ino uint64
}

// Key is j's key.
func (j *Job) Key() Key { return Key{j.ID, j.firstDir(), j.ino} }
