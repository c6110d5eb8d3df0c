// SPDX-License-Identifier: Apache-2.0

package notify

import (
	"errors"
	"fmt"
	"net/mail"
	"strings"
)

// maxAddress is RFC 5321's limit on a forward path.
const maxAddress = 254

// checkAddress accepts one plain mailbox (local@domain) and returns it
// without any display name. The address ends up in an SMTP envelope and a
// header, so CR, LF and every other control character are refused before
// the grammar is even asked, and so are lists and group syntax.
func checkAddress(s string) (string, error) {
	if s == "" || len(s) > maxAddress {
		return "", fmt.Errorf("address of %d bytes", len(s))
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return "", errors.New("address with a control character")
		}
	}
	a, err := mail.ParseAddress(s)
	if err != nil {
		return "", fmt.Errorf("address %q: %v", textSafe(s), err)
	}
	at := strings.LastIndexByte(a.Address, '@')
	if at <= 0 || at == len(a.Address)-1 {
		return "", fmt.Errorf("address %q: no local part or domain", textSafe(s))
	}
	return a.Address, nil
}

// validUser accepts the user names Slurm prints for a uid (POSIX portable
// names): the name goes into an address template and a mail's greeting.
func validUser(s string) bool {
	if s == "" || len(s) > 64 || s[0] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// ownerAddress is where a job's mail goes: the job's --mail-user when it is
// one valid address (the owner's own choice, as for Slurm's own mails),
// else the site's template filled with the owner's name from Slurm.
func ownerAddress(template, user, mailUser string) (string, error) {
	if strings.Contains(mailUser, "@") {
		if a, err := checkAddress(mailUser); err == nil {
			return a, nil
		}
	}
	if !validUser(user) {
		return "", fmt.Errorf("user name %q", textSafe(user))
	}
	return checkAddress(strings.Replace(template, "{user}", user, 1))
}
