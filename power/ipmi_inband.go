// SPDX-License-Identifier: Apache-2.0

package power

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync/atomic"
	"time"
)

// IPMIMessage is one message the kernel hands back on an IPMI device: a
// response to some request of this open file, or an event or command the
// driver queued (not asked for, but possible on a shared fd).
type IPMIMessage struct {
	RecvType int32
	MsgID    int64
	NetFn    byte
	Cmd      byte
	Data     []byte // completion code first
}

// Receive types of the Linux IPMI driver (include/uapi/linux/ipmi.h).
const (
	RecvTypeResponse = 1
	RecvTypeEvent    = 2
	RecvTypeCommand  = 3
)

// IPMIDevice is an open system interface. The Linux implementation is the
// ioctl pair IPMICTL_SEND_COMMAND / IPMICTL_RECEIVE_MSG_TRUNC; tests plug
// an in-memory fake since no machine here has a BMC.
type IPMIDevice interface {
	// Send queues a request to the BMC tagged with msgid.
	Send(msgid int64, netfn, cmd byte, data []byte) error
	// Receive returns the next message, waiting no longer than ctx allows
	// (then an error wrapping ErrIPMITimeout).
	Receive(ctx context.Context) (IPMIMessage, error)
	Close() error
}

// ErrIPMITimeout says the BMC did not answer within the deadline.
var ErrIPMITimeout = errors.New("no answer from the BMC before the deadline")

// maxForeign bounds how many unrelated messages (late answers to an
// abandoned request, events) one exchange skips before giving up.
const maxForeign = 16

// exchange sends one request and waits for its own response: the msgid,
// response netfn (request netfn | 1) and command must match; anything
// else on the fd is skipped.
func exchange(ctx context.Context, dev IPMIDevice, msgid int64, netfn, cmd byte, data []byte) ([]byte, error) {
	if err := dev.Send(msgid, netfn, cmd, data); err != nil {
		return nil, fmt.Errorf("send: %w", err)
	}
	for range maxForeign {
		m, err := dev.Receive(ctx)
		if err != nil {
			return nil, err
		}
		if m.RecvType == RecvTypeResponse && m.MsgID == msgid && m.NetFn == netfn|1 && m.Cmd == cmd {
			return m.Data, nil
		}
	}
	return nil, fmt.Errorf("%d unrelated messages on the IPMI device and no answer", maxForeign)
}

// InBand reads DCMI power through a local IPMI device. The device is
// opened for each reading (once per --collector.power.ipmi-interval): an answer that
// came too late dies with the file instead of queueing up, and a driver
// reload heals by itself.
type InBand struct {
	Path    string
	Open    func(path string) (IPMIDevice, error)
	Timeout time.Duration // per reading, on top of the caller's context
	msgid   atomic.Int64
}

// NewInBand reads through the device at path (from FindIPMIDevice).
func NewInBand(path string, timeout time.Duration) *InBand {
	return &InBand{Path: path, Open: OpenIPMIDevice, Timeout: timeout}
}

// Read asks the BMC for its power reading.
func (b *InBand) Read(ctx context.Context) (DCMIReading, error) {
	if b.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, b.Timeout)
		defer cancel()
	}
	dev, err := b.Open(b.Path)
	if err != nil {
		return DCMIReading{}, err
	}
	defer dev.Close()
	netfn, cmd, data := GetPowerReadingRequest()
	resp, err := exchange(ctx, dev, b.msgid.Add(1), netfn, cmd, data)
	if err != nil {
		return DCMIReading{}, fmt.Errorf("%s: %w", b.Path, err)
	}
	d, err := ParseGetPowerReading(resp)
	if err != nil {
		return d, fmt.Errorf("%s: %w", b.Path, err)
	}
	return d, nil
}

// DefaultIPMIDevices are the names udev and devfs-era setups give the
// first IPMI interface, tried in this order.
var DefaultIPMIDevices = []string{"/dev/ipmi0", "/dev/ipmi/0", "/dev/ipmidev/0"}

// ErrIPMIPermission says the device exists but this process may not open it.
var ErrIPMIPermission = errors.New("IPMI device not accessible: run jobscope as root, or give it read-write access to the device " +
	`(udev rule KERNEL=="ipmi[0-9]*", GROUP="ipmi", MODE="0660" plus SupplementaryGroups=ipmi in the unit), or CAP_DAC_OVERRIDE`)

// ErrNoIPMIDevice says no IPMI device node exists.
var ErrNoIPMIDevice = errors.New("no IPMI device (no BMC, or the ipmi_si and ipmi_devintf kernel modules are not loaded)")

// FindIPMIDevice returns the first of paths that opens. Opening needs no
// BMC round trip, so this is cheap enough for start-up; it tells "absent"
// (ErrNoIPMIDevice) from "not allowed" (ErrIPMIPermission) so the log
// line can say what to change.
func FindIPMIDevice(paths []string, open func(string) (IPMIDevice, error)) (string, error) {
	var denied, other error
	for _, p := range paths {
		dev, err := open(p)
		switch {
		case err == nil:
			dev.Close()
			return p, nil
		case errors.Is(err, fs.ErrPermission):
			if denied == nil {
				denied = fmt.Errorf("%s: %w", p, ErrIPMIPermission)
			}
		case errors.Is(err, fs.ErrNotExist), errors.Is(err, ErrNoIPMIDevice):
		default:
			if other == nil {
				other = err
			}
		}
	}
	if denied != nil {
		return "", denied
	}
	if other != nil {
		return "", other
	}
	return "", fmt.Errorf("tried %s: %w", strings.Join(paths, ", "), ErrNoIPMIDevice)
}
