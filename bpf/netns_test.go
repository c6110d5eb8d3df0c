// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bpf

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// netNS is a network namespace made for one test. Only the test's own
// helpers live in it, so its loopback carries their traffic and nothing
// else: the kernel's counters for that loopback are the ground truth for
// what the network programs should count, however the traffic was cut into
// packets (on a busy machine a slow receiver means more, smaller segments,
// each with its own headers).
type netNS struct {
	t  testing.TB
	fd int
}

// newNetNS makes the namespace on a thread of its own and brings its
// loopback up. That thread is never handed back to the Go scheduler: it ends
// with its goroutine, so no other goroutine ever runs in the namespace.
func newNetNS(t testing.TB) *netNS {
	t.Helper()
	type res struct {
		fd  int
		err error
	}
	rc := make(chan res, 1)
	go func() {
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			rc <- res{-1, fmt.Errorf("unshare: %w", err)}
			return
		}
		fd, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			rc <- res{-1, err}
			return
		}
		if err := loopbackUp(); err != nil {
			unix.Close(fd)
			rc <- res{-1, err}
			return
		}
		rc <- res{fd, nil}
	}()
	r := <-rc
	if r.err != nil {
		t.Fatalf("network namespace: %v", r.err)
	}
	n := &netNS{t: t, fd: r.fd}
	t.Cleanup(func() { unix.Close(n.fd) })
	return n
}

// loopbackUp sets IFF_UP on lo in the calling thread's namespace (a new
// namespace's lo is down).
func loopbackUp() error {
	s, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(s)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(s, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("lo flags: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(s, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("lo up: %w", err)
	}
	return nil
}

// in runs f on a locked thread moved into the namespace (children that f
// starts are born in it). The thread goes back to its own namespace after;
// if it cannot, it is left locked and ends with its goroutine.
func (n *netNS) in(f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		own, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			errc <- err
			return
		}
		defer unix.Close(own)
		if err := unix.Setns(n.fd, unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("setns: %w", err)
			return
		}
		ferr := f()
		if err := unix.Setns(own, unix.CLONE_NEWNET); err != nil {
			errc <- errors.Join(ferr, fmt.Errorf("setns back: %w", err))
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// ipStats are the namespace's IP counters: what its IP layer handed down to
// be sent (Ip OutRequests, IpExt OutOctets) and what it received (Ip
// InReceives, IpExt InOctets), at the same points and with the same
// IP-level lengths as the cgroup_skb programs see. They differ from each
// other where loopback cuts a GSO packet into segments between the two.
type ipStats struct {
	OutBytes, OutPackets, InBytes, InPackets uint64
}

func (s ipStats) sub(o ipStats) ipStats {
	return ipStats{s.OutBytes - o.OutBytes, s.OutPackets - o.OutPackets, s.InBytes - o.InBytes, s.InPackets - o.InPackets}
}

// ip reads the namespace's IP counters from /proc/thread-self/net/{snmp,
// netstat}, which show the reading thread's namespace.
func (n *netNS) ip() ipStats {
	n.t.Helper()
	var snmp, netstat []byte
	err := n.in(func() error {
		var err error
		if snmp, err = os.ReadFile("/proc/thread-self/net/snmp"); err != nil {
			return err
		}
		netstat, err = os.ReadFile("/proc/thread-self/net/netstat")
		return err
	})
	if err != nil {
		n.t.Fatalf("namespace's IP counters: %v", err)
	}
	v, err := parseNetstat(string(snmp) + string(netstat))
	if err != nil {
		n.t.Fatal(err)
	}
	var s ipStats
	for _, f := range []struct {
		name string
		to   *uint64
	}{
		{"Ip:OutRequests", &s.OutPackets}, {"IpExt:OutOctets", &s.OutBytes},
		{"Ip:InReceives", &s.InPackets}, {"IpExt:InOctets", &s.InBytes},
	} {
		x, ok := v[f.name]
		if !ok {
			n.t.Fatalf("namespace's IP counters: no %s", f.name)
		}
		*f.to = x
	}
	return s
}

// parseNetstat reads the /proc/net/snmp and /proc/net/netstat format: for
// each group, a line of names and a line of values, both starting with the
// group's name. It returns "Group:Name" -> value.
func parseNetstat(text string) (map[string]uint64, error) {
	out := map[string]uint64{}
	lines := strings.Split(strings.TrimSpace(text), "\n")
	if len(lines)%2 != 0 {
		return nil, fmt.Errorf("netstat: %d lines, want pairs of names and values", len(lines))
	}
	for i := 0; i < len(lines); i += 2 {
		names, vals := strings.Fields(lines[i]), strings.Fields(lines[i+1])
		if len(names) == 0 || len(names) != len(vals) || names[0] != vals[0] {
			return nil, fmt.Errorf("netstat: line %d does not pair with the next", i+1)
		}
		for k := 1; k < len(names); k++ {
			// Ip Forwarding and a few others are signed (Tcp MaxConn is -1).
			v, err := strconv.ParseInt(vals[k], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("netstat %s%s: %w", names[0], names[k], err)
			}
			out[names[0]+names[k]] = uint64(v)
		}
	}
	return out, nil
}

// settled reads the IP counters once they stop moving: a closed
// connection's last FIN and ACK (MPTCP's DATA_FIN from a worker) may follow
// the helpers' exit.
func (n *netNS) settled() ipStats {
	n.t.Helper()
	last := n.ip()
	for range 50 {
		time.Sleep(20 * time.Millisecond)
		now := n.ip()
		if now == last {
			return now
		}
		last = now
	}
	n.t.Fatalf("the namespace still moved packets 1s after the helpers exited: %+v", last)
	return last
}

// Header bounds of an IPv4 TCP packet: 20-byte IP and TCP headers at the
// least, 60 each with every option.
const (
	minHeaders = 40
	maxHeaders = 120
	// Packets a connection sends from no full socket, which the programs
	// cannot tie to a job: the SYN-ACK (from a request socket) and ACKs and
	// RSTs after close (from a time-wait socket or the per-CPU control
	// socket), retransmissions of those included. None carries payload.
	// Seen: 0 or 1 per connection.
	maxUntied = 8
)

// checkNet compares what the programs counted for one connection, from job
// snd to job rcv, with the IP counters of the namespace that carried it and
// nothing else (ip, taken over the connection's life).
//
// The programs count IP packets, headers and retransmissions included, so
// what lies above the payload is no fixed ratio of it: a slow receiver on a
// busy machine means more, smaller segments, each with its headers, and
// packets that loopback queues on different CPUs' backlogs arrive reordered
// and are retransmitted (seen on 2 busy CPUs: 27 spurious fast
// retransmissions in one 200 MiB MPTCP transfer, +0.8% by themselves). The
// kernel's IP counters include all of it. Egress sees a GSO packet whole, as
// the IP layer sends it; loopback may cut it into segments, each with its
// own headers, before the receiving side (and ingress) sees them: so each
// direction is compared with its own counter.
func checkNet(t *testing.T, what string, snd, rcv *Counters, ip ipStats, payload uint64) {
	t.Helper()
	t.Logf("%s: IP sent %d bytes in %d packets (%+.3f%% over the payload), received %d in %d; "+
		"sender tx %d B in %d packets, rx %d B in %d; receiver tx %d B in %d, rx %d B in %d",
		what, ip.OutBytes, ip.OutPackets, 100*(float64(ip.OutBytes)/float64(payload)-1), ip.InBytes, ip.InPackets,
		snd.TxBytes, snd.TxPackets, snd.RxBytes, snd.RxPackets, rcv.TxBytes, rcv.TxPackets, rcv.RxBytes, rcv.RxPackets)
	for _, d := range []struct {
		dir                      string
		bytes, pk, ipBytes, ipPk uint64
	}{
		{"egress", snd.TxBytes + rcv.TxBytes, snd.TxPackets + rcv.TxPackets, ip.OutBytes, ip.OutPackets},
		{"ingress", snd.RxBytes + rcv.RxBytes, snd.RxPackets + rcv.RxPackets, ip.InBytes, ip.InPackets},
	} {
		// Both ends together: every packet of the namespace but the untied
		// ones, which carry headers only.
		untied := int64(d.ipPk) - int64(d.pk)
		floor := d.ipBytes - uint64(max(untied, 0))*maxHeaders
		if untied < 0 || untied > maxUntied || d.bytes < floor || d.bytes > d.ipBytes {
			t.Errorf("%s %s: %d bytes in %d packets counted, the kernel's IP counters say %d bytes in %d packets: "+
				"want 0..%d header-only packets fewer (%d..%d bytes)", what, d.dir, d.bytes, d.pk, d.ipBytes, d.ipPk, maxUntied, floor, d.ipBytes)
		}
	}
	// The data went from snd to rcv: its packets carry the payload (at least
	// once) and headers, the others headers only. Counted against the wrong
	// job, or the wrong direction, the bytes fail one of these.
	for _, d := range []struct {
		name      string
		bytes, pk uint64
		data      bool
	}{
		{"sender tx", snd.TxBytes, snd.TxPackets, true},
		{"receiver rx", rcv.RxBytes, rcv.RxPackets, true},
		{"receiver tx", rcv.TxBytes, rcv.TxPackets, false},
		{"sender rx", snd.RxBytes, snd.RxPackets, false},
	} {
		if d.data && d.bytes < payload+minHeaders*d.pk {
			t.Errorf("%s %s: %d bytes in %d packets, below the payload and minimal headers (%d)", what, d.name, d.bytes, d.pk, payload+minHeaders*d.pk)
		}
		if !d.data && d.bytes > maxHeaders*d.pk {
			t.Errorf("%s %s: %d bytes in %d packets, above headers alone (%d)", what, d.name, d.bytes, d.pk, maxHeaders*d.pk)
		}
	}
}

// TestParseNetstat: the counters checkNet trusts are read by name from
// pairs of lines; a value line that does not pair with its names is an
// error, not a silent shift of every counter after it.
func TestParseNetstat(t *testing.T) {
	const text = "Ip: Forwarding InReceives OutRequests\nIp: 2 4936 3669\n" +
		"Tcp: MaxConn InSegs\nTcp: -1 4936\n" +
		"IpExt: InOctets OutOctets\nIpExt: 210407502 210341618\n"
	v, err := parseNetstat(text)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]uint64{
		"Ip:InReceives": 4936, "Ip:OutRequests": 3669, "IpExt:InOctets": 210407502, "IpExt:OutOctets": 210341618,
	} {
		if v[name] != want {
			t.Errorf("%s = %d, want %d", name, v[name], want)
		}
	}
	for _, bad := range []string{
		"Ip: InReceives OutRequests\nIp: 4936\n",      // a value missing
		"Ip: InReceives\nIpExt: 4936\n",               // another group's values
		"Ip: InReceives\nIp: 4936\nIpExt: InOctets\n", // names without values
		"Ip: InReceives\nIp: many\n",                  // not a number
	} {
		if _, err := parseNetstat(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
