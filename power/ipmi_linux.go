// SPDX-License-Identifier: Apache-2.0

//go:build linux

package power

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"runtime"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Mirrors of include/uapi/linux/ipmi.h. Go lays these out as C does on
// every Linux ABI (C long is Go int there), so their sizes, which are part
// of the ioctl numbers, come from unsafe.Sizeof; a test pins them on
// 64-bit.
type ipmiMsg struct {
	NetFn   uint8
	Cmd     uint8
	DataLen uint16
	Data    *byte
}

type ipmiReq struct {
	Addr    unsafe.Pointer
	AddrLen uint32
	MsgID   int
	Msg     ipmiMsg
}

type ipmiRecv struct {
	RecvType int32
	Addr     unsafe.Pointer
	AddrLen  uint32
	MsgID    int
	Msg      ipmiMsg
}

// ipmiSystemInterfaceAddr addresses the local BMC.
type ipmiSystemInterfaceAddr struct {
	AddrType int32
	Channel  int16
	LUN      uint8
}

// ipmiAddr is big enough for any address the driver hands back.
type ipmiAddr struct {
	AddrType int32
	Channel  int16
	Data     [32]byte
}

const (
	ipmiSystemInterfaceAddrType = 0x0c
	ipmiBMCChannel              = 0x0f
	ipmiMaxMsgLength            = 272 // IPMI_MAX_MSG_LENGTH

	iocMagic = 'i'
	// _IOWR('i', 11, struct ipmi_recv) and _IOR('i', 13, struct ipmi_req).
	ipmictlReceiveMsgTrunc = 3<<30 | unsafe.Sizeof(ipmiRecv{})<<16 | iocMagic<<8 | 11
	ipmictlSendCommand     = 2<<30 | unsafe.Sizeof(ipmiReq{})<<16 | iocMagic<<8 | 13
)

type ioctlDevice struct{ fd int }

// OpenIPMIDevice opens a Linux IPMI character device (ipmi_devintf).
func OpenIPMIDevice(path string) (IPMIDevice, error) {
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		if err == unix.ENXIO || err == unix.ENODEV {
			// A device node left without its driver.
			return nil, &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w: %v", ErrNoIPMIDevice, err)}
		}
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return &ioctlDevice{fd: fd}, nil
}

func (d *ioctlDevice) Close() error { return unix.Close(d.fd) }

func (d *ioctlDevice) Send(msgid int64, netfn, cmd byte, data []byte) error {
	addr := ipmiSystemInterfaceAddr{AddrType: ipmiSystemInterfaceAddrType, Channel: ipmiBMCChannel}
	req := ipmiReq{
		Addr:    unsafe.Pointer(&addr),
		AddrLen: uint32(unsafe.Sizeof(addr)),
		MsgID:   int(msgid),
		Msg:     ipmiMsg{NetFn: netfn, Cmd: cmd, DataLen: uint16(len(data))},
	}
	if len(data) > 0 {
		req.Msg.Data = &data[0]
	}
	err := ioctl(d.fd, ipmictlSendCommand, unsafe.Pointer(&req))
	runtime.KeepAlive(&addr)
	runtime.KeepAlive(data)
	return err
}

func (d *ioctlDevice) Receive(ctx context.Context) (IPMIMessage, error) {
	if err := waitReadable(ctx, d.fd); err != nil {
		return IPMIMessage{}, err
	}
	var addr ipmiAddr
	buf := make([]byte, ipmiMaxMsgLength)
	recv := ipmiRecv{
		Addr:    unsafe.Pointer(&addr),
		AddrLen: uint32(unsafe.Sizeof(addr)),
		Msg:     ipmiMsg{Data: &buf[0], DataLen: uint16(len(buf))},
	}
	err := ioctl(d.fd, ipmictlReceiveMsgTrunc, unsafe.Pointer(&recv))
	runtime.KeepAlive(&addr)
	runtime.KeepAlive(buf)
	// EMSGSIZE: the message was cut to the buffer; ours holds any legal
	// IPMI message, so keep what came.
	if err != nil && !errors.Is(err, unix.EMSGSIZE) {
		return IPMIMessage{}, fmt.Errorf("receive: %w", err)
	}
	n := min(int(recv.Msg.DataLen), len(buf))
	return IPMIMessage{RecvType: recv.RecvType, MsgID: int64(recv.MsgID), NetFn: recv.Msg.NetFn, Cmd: recv.Msg.Cmd, Data: buf[:n:n]}, nil
}

func ioctl(fd int, req uintptr, arg unsafe.Pointer) error {
	for {
		_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), req, uintptr(arg))
		switch errno {
		case 0:
			return nil
		case unix.EINTR:
			continue
		default:
			return errno
		}
	}
}

// pollSlice bounds one poll(2) so a cancelled context is noticed soon
// even without a deadline.
const pollSlice = 250 * time.Millisecond

// waitReadable waits until fd has a message or ctx ends. The receive
// ioctl itself never blocks (the driver answers EAGAIN on an empty
// queue); waiting is all here, in poll(2) slices.
func waitReadable(ctx context.Context, fd int) error {
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%w (%v)", ErrIPMITimeout, err)
		}
		wait := pollSlice
		if dl, ok := ctx.Deadline(); ok {
			wait = min(wait, time.Until(dl))
		}
		ms := int(wait.Milliseconds())
		if wait > 0 && ms == 0 {
			ms = 1
		}
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, max(ms, 0))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("poll: %w", err)
		}
		if n == 0 {
			continue
		}
		if fds[0].Revents&unix.POLLIN != 0 {
			return nil
		}
		return fmt.Errorf("poll: device error (revents 0x%x)", fds[0].Revents)
	}
}
