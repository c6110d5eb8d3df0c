// SPDX-License-Identifier: Apache-2.0

//go:build cgo && !nogpu

package gpu

import (
	"log/slog"
	"sync"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// xidQueueMax bounds the events kept between scrapes; a storm of Xids
// between two scrapes keeps the first ones and counts the rest as dropped.
const xidQueueMax = 4096

// xidPoller waits on an NVML event set in its own goroutine, so a scrape
// never blocks on nvmlEventSetWait; scrapes drain what arrived.
type xidPoller struct {
	set nvml.EventSet
	log *slog.Logger

	mu         sync.Mutex
	queue      []XidEvent
	dropped    int
	loggedDrop bool

	done   chan struct{}
	exited chan struct{}
}

// startXidPoller registers every device that supports Xid events; it
// returns nil (and logs once) when none does.
func startXidPoller(lib nvml.Interface, n int, log *slog.Logger) *xidPoller {
	set, ret := lib.EventSetCreate()
	if ret != nvml.SUCCESS {
		log.Info("GPU Xid events unavailable", "err", ret)
		return nil
	}
	registered := 0
	for i := 0; i < n; i++ {
		dev, ret := lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			continue
		}
		types, ret := dev.GetSupportedEventTypes()
		if ret != nvml.SUCCESS || types&nvml.EventTypeXidCriticalError == 0 {
			continue
		}
		if dev.RegisterEvents(nvml.EventTypeXidCriticalError, set) == nvml.SUCCESS {
			registered++
		}
	}
	if registered == 0 {
		_ = set.Free() // unused
		log.Info("GPU Xid events unavailable: no device accepts registration")
		return nil
	}
	p := &xidPoller{set: set, log: log, done: make(chan struct{}), exited: make(chan struct{})}
	go p.run()
	return p
}

func (p *xidPoller) run() {
	defer close(p.exited)
	loggedErr := false
	for {
		select {
		case <-p.done:
			return
		default:
		}
		// A short wait bounds how long stop() takes.
		data, ret := p.set.Wait(500)
		switch ret {
		case nvml.SUCCESS:
			if data.EventType&nvml.EventTypeXidCriticalError != 0 && data.Device != nil {
				p.add(data)
			}
		case nvml.ERROR_TIMEOUT:
		default:
			if !loggedErr {
				p.log.Warn("GPU Xid event wait failed (logged once)", "err", ret)
				loggedErr = true
			}
			select {
			case <-p.done:
				return
			case <-time.After(time.Second):
			}
		}
	}
}

func (p *xidPoller) add(data nvml.EventData) {
	uuid, ret := data.Device.GetUUID()
	if ret != nvml.SUCCESS {
		return
	}
	gi := -1
	if data.GpuInstanceId != 0xFFFFFFFF {
		gi = int(data.GpuInstanceId)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.queue) >= xidQueueMax {
		p.dropped++
		return
	}
	p.queue = append(p.queue, XidEvent{UUID: uuid, GPUInstanceID: gi, Xid: data.EventData})
}

// drain hands out the events that arrived since the last call.
func (p *xidPoller) drain() []XidEvent {
	p.mu.Lock()
	defer p.mu.Unlock()
	q := p.queue
	p.queue = nil
	if p.dropped > 0 && !p.loggedDrop {
		p.log.Warn("GPU Xid events dropped: queue full between scrapes (logged once)", "dropped", p.dropped)
		p.loggedDrop = true
	}
	p.dropped = 0
	return q
}

func (p *xidPoller) stop() {
	close(p.done)
	<-p.exited
	_ = p.set.Free() // at shutdown: nothing left to do if it fails
}
