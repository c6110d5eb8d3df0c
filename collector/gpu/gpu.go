// SPDX-License-Identifier: Apache-2.0

package gpu

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"

	"github.com/jobscope/jobscope/collector"
	"github.com/jobscope/jobscope/collector/provide"
	"github.com/jobscope/jobscope/collector/provide/gpus"
	"github.com/jobscope/jobscope/discovery"
	"github.com/jobscope/jobscope/gpu"
)

// Factory describes the gpu collector: NVIDIA GPUs per job, and GPUs
// that belong to no job. The backend is the gpus provider's, which owns
// the --gpu.* flags.
func Factory() collector.Factory {
	return collector.Factory{
		Name:      "gpu",
		Help:      "NVIDIA GPUs and MIG instances per job (NVML or DCGM), and GPUs no job holds",
		DefaultIn: []collector.Mode{collector.ModeNode},
		NeedsJobs: true,
		Needs:     []string{gpus.Name},
		Descs:     func() []*collector.Desc { return newGPUDescs().all() },
		Flags:     func(*pflag.FlagSet) func(env *collector.Env) (collector.Collector, error) { return New },
	}
}

type gpuCollector struct {
	source  *gpus.Provider
	openErr error // why there is no backend (no driver: each scrape says no data)
	d       gpuDescs

	xidJob  *collector.State[jobXid] // Xid counts per job GPU, dropped when the job ends
	mu      sync.Mutex
	xidNode map[xidKey]float64 // Xid counts of GPUs no job held
}

type xidKey struct {
	uuid string
	xid  uint64
}

// jobXid is one job's Xid counts by GPU and Xid.
type jobXid map[xidKey]*xidCount

type xidCount struct {
	n      float64
	labels []string // device labels when last seen
}

// New builds the collector over the GPU provider's backend. A node without
// a GPU library or driver still gets a collector: each scrape then reports
// success 0 with one log line in all; a configuration mistake makes it
// unavailable, said once at start-up.
func New(env *collector.Env) (collector.Collector, error) {
	c := &gpuCollector{
		d:       newGPUDescs(),
		xidJob:  collector.NewState(func() *jobXid { return &jobXid{} }),
		xidNode: map[xidKey]float64{},
	}
	src, err := provide.Need[*gpus.Provider](env.Providers, gpus.Name)
	switch {
	case err == nil:
		c.source = src
	case errors.Is(err, gpu.ErrNoDevice):
		c.openErr = err
	default:
		return nil, err
	}
	return c, nil
}

func (c *gpuCollector) Collect(s *collector.Scrape, ch chan<- prometheus.Metric) error {
	if c.source == nil {
		return fmt.Errorf("%w: %v", collector.ErrNoData, c.openErr)
	}
	rd, err := c.source.Read(s)
	if err != nil {
		return err
	}
	for _, e := range rd.Errors {
		s.Problem(c.source.Backend()+"_"+e.Call, e)
	}
	for _, p := range rd.Problems {
		s.Problem(p.Cause, p.Err)
	}
	jobs := s.Jobs()
	byID := make(map[string]*discovery.Job, len(jobs))
	for _, j := range jobs {
		byID[j.ID] = j
	}
	backend := c.source.Backend()
	if rd.Via != "" {
		backend = rd.Via // DCGM is away and NVML answers meanwhile
	}
	age := 0.0
	if rd.Stale {
		age = rd.Age.Seconds()
		s.Problem("stale_snapshot", fmt.Errorf("%s unreachable: serving the snapshot read %s ago", c.source.Backend(), rd.Age.Round(time.Second)))
	}
	ch <- c.d.age.Gauge(age)
	byUUID := make(map[string]*gpu.Device, len(rd.Devices))
	for i := range rd.Devices {
		d := &rd.Devices[i]
		byUUID[d.UUID] = d
		dl := deviceLabelValues(d)
		ch <- c.d.nodeInfo.Gauge(1, append(dl, backend)...)
		ch <- c.d.lost.Gauge(lostValue(d), dl...)
		if d.Lost {
			s.Problem("gpu_lost", fmt.Errorf("GPU %d (%s) lost: the driver reports it fallen off the bus", d.Index, d.UUID))
		}
		a, held := rd.Assign[d.UUID]
		if j := byID[a.JobID]; held && j != nil {
			series := s.Series(j)
			ch <- series.Gauge(c.d.jobInfo, 1, append(dl, string(a.Method))...)
			c.emitFields(ch, c.d.job, d, series.Metric)
		} else {
			c.emitFields(ch, c.d.node, d, func(desc *collector.Desc, t prometheus.ValueType, v float64, lv ...string) prometheus.Metric {
				return desc.Metric(t, v, lv...)
			})
		}
	}
	c.collectXid(s, ch, rd, byUUID, byID)
	return nil
}

func (c *gpuCollector) emitFields(ch chan<- prometheus.Metric, descs map[string]*collector.Desc, d *gpu.Device,
	metric func(desc *collector.Desc, t prometheus.ValueType, v float64, lv ...string) prometheus.Metric) {
	dl := deviceLabelValues(d)
	for _, spec := range gpuFieldSpecs {
		v, ok := d.Values[spec.field]
		if !ok {
			continue
		}
		lv := dl
		if spec.label != "" {
			lv = append(append(make([]string, 0, len(dl)+1), dl...), spec.value)
		}
		ch <- metric(descs[spec.name], spec.typ, v, lv...)
	}
}

func lostValue(d *gpu.Device) float64 {
	if d.Lost {
		return 1
	}
	return 0
}

// deviceLabelValues matches gpuDeviceLabels.
func deviceLabelValues(d *gpu.Device) []string {
	idx := strconv.Itoa(d.Index)
	if d.IsMIG() {
		return []string{idx, d.ParentUUID, d.Model, d.UUID}
	}
	return []string{idx, d.UUID, d.Model, ""}
}

// collectXid attributes new Xid events to the job that holds the device
// now, keeps the counts, and emits them. Counts of ended jobs go with the
// job's state.
func (c *gpuCollector) collectXid(s *collector.Scrape, ch chan<- prometheus.Metric, rd *gpus.Reading,
	byUUID map[string]*gpu.Device, byID map[string]*discovery.Job) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ev := range rd.Xid {
		d := byUUID[ev.UUID]
		if ev.GPUInstanceID >= 0 {
			for i := range rd.Devices {
				if rd.Devices[i].ParentUUID == ev.UUID && rd.Devices[i].GPUInstanceID == ev.GPUInstanceID {
					d = &rd.Devices[i]
					break
				}
			}
		}
		if d == nil {
			continue // a device that vanished since the event
		}
		k := xidKey{uuid: d.UUID, xid: ev.Xid}
		if j := byID[rd.Holder(d.UUID)]; j != nil {
			c.xidJob.Job(s, j).Do(func(x *jobXid) {
				xc := (*x)[k]
				if xc == nil {
					xc = &xidCount{}
					(*x)[k] = xc
				}
				xc.n++
				xc.labels = deviceLabelValues(d)
			})
		} else {
			c.xidNode[k]++
		}
	}
	for _, j := range s.Jobs() {
		c.xidJob.Job(s, j).Do(func(x *jobXid) {
			for k, xc := range *x {
				ch <- s.Series(j).Counter(c.d.jobXid, xc.n, append(xc.labels, strconv.FormatUint(k.xid, 10))...)
			}
		})
	}
	c.xidJob.Sweep(s)
	for k, n := range c.xidNode {
		d := byUUID[k.uuid]
		if d == nil {
			continue // the device is gone; its count comes back if it does
		}
		ch <- c.d.nodeXid.Counter(n, append(deviceLabelValues(d), strconv.FormatUint(k.xid, 10))...)
	}
}
