// SPDX-License-Identifier: Apache-2.0

package discovery

import (
	"os/user"
	"strconv"
	"sync"
)

// userCache resolves uids to names once; lookups can hit NSS/LDAP.
type userCache struct {
	lookup func(uid int) (string, error)
	mu     sync.Mutex
	names  map[int]string
}

func newUserCache(lookup func(int) (string, error)) *userCache {
	if lookup == nil {
		lookup = func(uid int) (string, error) {
			u, err := user.LookupId(strconv.Itoa(uid))
			if err != nil {
				return "", err
			}
			return u.Username, nil
		}
	}
	return &userCache{lookup: lookup, names: map[int]string{}}
}

// name returns the user name of uid, or the uid in decimal when it has none
// (the series stay attributable), with ok false the first time that happens.
func (c *userCache) name(uid int) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n, ok := c.names[uid]; ok {
		return n, nil
	}
	n, err := c.lookup(uid)
	if err != nil || n == "" {
		n = strconv.Itoa(uid)
	}
	c.names[uid] = n
	return n, err
}
