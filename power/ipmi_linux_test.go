// SPDX-License-Identifier: Apache-2.0

//go:build linux

package power

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestIPMIUAPILayout pins the ioctl numbers and struct sizes of
// include/uapi/linux/ipmi.h on 64-bit Linux (ipmitool and the kernel
// agree on 0x8028690d and 0xc030690b there).
func TestIPMIUAPILayout(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("layout figures are for 64-bit ABIs")
	}
	if s := unsafe.Sizeof(ipmiReq{}); s != 40 {
		t.Errorf("ipmi_req %d bytes, want 40", s)
	}
	if s := unsafe.Sizeof(ipmiRecv{}); s != 48 {
		t.Errorf("ipmi_recv %d bytes, want 48", s)
	}
	if s := unsafe.Sizeof(ipmiSystemInterfaceAddr{}); s != 8 {
		t.Errorf("ipmi_system_interface_addr %d bytes, want 8", s)
	}
	if ipmictlSendCommand != 0x8028690d || ipmictlReceiveMsgTrunc != 0xc030690b {
		t.Errorf("ioctl numbers %#x %#x", ipmictlSendCommand, ipmictlReceiveMsgTrunc)
	}
	if o := unsafe.Offsetof(ipmiRecv{}.Msg); o != 32 {
		t.Errorf("ipmi_recv.msg at %d, want 32", o)
	}
}

// TestWaitReadable: the receive wait ends at the deadline on a silent fd
// (a pipe stands in for a BMC that never answers) and returns at once
// when a message is there.
func TestWaitReadable(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	sc, err := r.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var fd int
	sc.Control(func(f uintptr) { fd = int(f) })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if err := waitReadable(ctx, fd); !errors.Is(err, ErrIPMITimeout) {
		t.Fatalf("silent fd: %v", err)
	}
	cctx, ccancel := context.WithCancel(context.Background())
	ccancel()
	if err := waitReadable(cctx, fd); !errors.Is(err, ErrIPMITimeout) {
		t.Fatalf("cancelled: %v", err)
	}
	w.Write([]byte{1})
	if err := waitReadable(context.Background(), fd); err != nil {
		t.Fatalf("readable fd: %v", err)
	}
}

// TestOpenIPMIDeviceErrors: a missing node reads as absent; a file that is
// not an IPMI device fails the ioctl instead of hanging.
func TestOpenIPMIDeviceErrors(t *testing.T) {
	if _, err := OpenIPMIDevice(filepath.Join(t.TempDir(), "ipmi0")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing: %v", err)
	}
	dev, err := OpenIPMIDevice(os.DevNull)
	if err != nil {
		t.Skipf("cannot open %s: %v", os.DevNull, err)
	}
	defer dev.Close()
	netfn, cmd, data := GetPowerReadingRequest()
	if err := dev.Send(1, netfn, cmd, data); !errors.Is(err, unix.ENOTTY) {
		t.Fatalf("send to %s: %v, want ENOTTY", os.DevNull, err)
	}
	// /dev/null polls readable: Receive reaches the ioctl, which fails.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, err := dev.Receive(ctx); !errors.Is(err, unix.ENOTTY) {
		t.Fatalf("receive from %s: %v, want ENOTTY", os.DevNull, err)
	}
}

// TestInBandRealDevice talks to a real BMC when the node has one (root
// only); it proves the ioctl path end to end where hardware exists.
func TestInBandRealDevice(t *testing.T) {
	path, err := FindIPMIDevice(DefaultIPMIDevices, OpenIPMIDevice)
	if err != nil {
		t.Skipf("no usable IPMI device here: %v", err)
	}
	d, err := NewInBand(path, 10*time.Second).Read(context.Background())
	if errors.Is(err, ErrUnsupported) || errors.Is(err, ErrNotActive) {
		t.Skipf("BMC without DCMI power reading: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %+v", path, d)
	if d.Current <= 0 {
		t.Fatalf("current power %v W", d.Current)
	}
}
