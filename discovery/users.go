package discovery

import (
	"os/user"
	"strconv"
	"sync"
)

// userCache resolves uids to names and names to uids once each; lookups
// can hit NSS/LDAP.
type userCache struct {
	lookup    func(uid int) (string, error)
	lookupUID func(name string) (int, error)
	mu        sync.Mutex
	names     map[int]string
	uids      map[string]uidAnswer
}

type uidAnswer struct {
	uid int
	err error
}

func newUserCache(lookup func(int) (string, error), lookupUID func(string) (int, error)) *userCache {
	if lookupUID == nil {
		lookupUID = func(name string) (int, error) {
			u, err := user.Lookup(name)
			if err != nil {
				return -1, err
			}
			return strconv.Atoi(u.Uid)
		}
	}
	if lookup == nil {
		lookup = func(uid int) (string, error) {
			u, err := user.LookupId(strconv.Itoa(uid))
			if err != nil {
				return "", err
			}
			return u.Username, nil
		}
	}
	return &userCache{lookup: lookup, lookupUID: lookupUID, names: map[int]string{}, uids: map[string]uidAnswer{}}
}

// uid resolves a user name (from a job's environment) to its uid. Answers
// are cached, failures too: a forged name costs one NSS lookup. The cache
// holds names of at most maxValue bytes (parseVars drops longer values),
// one per distinct name a job's environment gave on this node.
func (c *userCache) uid(name string) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if a, ok := c.uids[name]; ok {
		return a.uid, a.err
	}
	uid, err := c.lookupUID(name)
	if len(c.uids) >= maxCachedNames {
		clear(c.uids) // many distinct forged names: start over rather than grow
	}
	c.uids[name] = uidAnswer{uid, err}
	return uid, err
}

// maxCachedNames bounds the name cache against a job that forges a new
// user name in each of many processes.
const maxCachedNames = 4096

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
