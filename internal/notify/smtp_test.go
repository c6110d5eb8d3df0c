// SPDX-License-Identifier: Apache-2.0

package notify

import (
	"bufio"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// fakeSMTP is a minimal SMTP server on 127.0.0.1 that records what it is
// given; while down it answers 421 and hangs up, as a relay out of service.
type fakeSMTP struct {
	l    net.Listener
	port int
	down atomic.Bool
	mu   sync.Mutex
	msgs []smtpMsg
}

type smtpMsg struct {
	From string
	To   []string
	Data string
}

func newFakeSMTP(t *testing.T) *fakeSMTP {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &fakeSMTP{l: l, port: l.Addr().(*net.TCPAddr).Port}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go s.serve(c)
		}
	}()
	return s
}

func (s *fakeSMTP) messages() []smtpMsg {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]smtpMsg(nil), s.msgs...)
}

func (s *fakeSMTP) serve(c net.Conn) {
	defer c.Close()
	w := bufio.NewWriter(c)
	r := bufio.NewReader(c)
	say := func(line string) { w.WriteString(line + "\r\n"); w.Flush() }
	if s.down.Load() {
		say("421 4.3.2 service not available")
		return
	}
	say("220 fake ESMTP")
	var m smtpMsg
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		cmd := strings.ToUpper(strings.TrimSpace(line))
		switch {
		case strings.HasPrefix(cmd, "EHLO"):
			say("250-fake")
			say("250 8BITMIME")
		case strings.HasPrefix(cmd, "HELO"), strings.HasPrefix(cmd, "NOOP"):
			say("250 ok")
		case strings.HasPrefix(cmd, "RSET"):
			m = smtpMsg{}
			say("250 ok")
		case strings.HasPrefix(cmd, "MAIL FROM:"):
			m.From = angle(line)
			say("250 ok")
		case strings.HasPrefix(cmd, "RCPT TO:"):
			m.To = append(m.To, angle(line))
			say("250 ok")
		case cmd == "DATA":
			say("354 go on")
			var b strings.Builder
			for {
				l, err := r.ReadString('\n')
				if err != nil {
					return
				}
				if l == ".\r\n" || l == ".\n" {
					break
				}
				b.WriteString(strings.TrimPrefix(l, "."))
			}
			m.Data = b.String()
			s.mu.Lock()
			s.msgs = append(s.msgs, m)
			s.mu.Unlock()
			m = smtpMsg{}
			say("250 queued")
		case cmd == "QUIT":
			say("221 bye")
			return
		default:
			say("502 not implemented")
		}
	}
}

// angle is the <path> of a MAIL or RCPT line, parameters left out.
func angle(line string) string {
	_, rest, _ := strings.Cut(line, "<")
	p, _, _ := strings.Cut(rest, ">")
	return p
}
