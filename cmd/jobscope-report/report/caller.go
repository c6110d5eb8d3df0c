// SPDX-License-Identifier: Apache-2.0

package report

import (
	"os/user"
	"strconv"
)

// callerName is who runs the report, for deciding what of a job only its
// owner may see: the kernel's uid, named by the system's user database.
// user.Current is not used: without cgo (the static build) it falls back
// to $USER when /etc/passwd has no entry for the uid (LDAP users), and
// anyone can set $USER. A uid without a name gets "#<uid>", which no
// Slurm user name equals, so such a caller sees no one's private details.
func callerName(uid int, lookupID func(string) (*user.User, error)) string {
	id := strconv.Itoa(uid)
	if u, err := lookupID(id); err == nil && u.Username != "" {
		return u.Username
	}
	return "#" + id
}
