// SPDX-License-Identifier: Apache-2.0

//go:build cgo && !nogpu

package gpu

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/NVIDIA/go-dcgm/pkg/dcgm"
)

// DCGMBuilt reports whether this binary carries the DCGM backend.
const DCGMBuilt = true

// dcgmBackend reads watched fields from a running nv-hostengine. go-dcgm
// keeps one connection per process in package state, so there is at most
// one such backend (the collector shares it through env.Shared).
type dcgmBackend struct {
	log     *slog.Logger
	cleanup func()

	group     dcgm.GroupHandle
	haveGroup bool               // DCGM may hand out small ids, so no zero check
	fields    []dcgm.FieldHandle // destroyed on Close
	xidFields dcgm.FieldHandle
	haveXid   bool
	gpus      []dcgm.GroupEntityPair
	gpuFields []dcgm.Short
	instances []dcgmInstance
	instPairs []dcgm.GroupEntityPair
	instField []dcgm.Short
	profiling bool // DCGM's profiling fields are watched

	// sem serialises snapshots (Xid cursor, GPM samples), bounded by each
	// scrape's deadline like the NVML backend.
	sem      chan struct{}
	xidSince time.Time
	nv       *nvmlHelper // PIDs, MIG UUIDs and GPM fallback; nil without NVML
}

// dcgmInstance is a MIG GPU instance as DCGM's hierarchy lists it.
type dcgmInstance struct {
	entity    uint // DCGM GPU-instance entity id
	parent    uint // DCGM GPU id
	gi, ci    int  // NVML GPU and compute instance ids
	parentIdx int
}

// openDCGM connects to nv-hostengine in Standalone mode. go-dcgm's Init
// dlopens libdcgm.so.4 and returns an error when it is missing, before any
// other DCGM symbol is used; nothing else is called unless Init succeeded.
func openDCGM(o DCGMOptions, log *slog.Logger) (Backend, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if o.Address == "" {
		o.Address = DefaultDCGMAddress
	}
	if o.Interval <= 0 {
		o.Interval = time.Second
	}
	addr, sock, err := dcgmConnectArgs(o.Address)
	if err != nil {
		return nil, err
	}
	cleanup, err := dcgm.Init(dcgm.Standalone, addr, sock)
	if err != nil {
		if strings.Contains(err.Error(), "libdcgm") {
			err = fmt.Errorf("%w: %v", ErrNoLibrary, err) // no host engine will ever help
		}
		return nil, fmt.Errorf("%w: dcgm at %s: %w", ErrNoDevice, o.Address, err)
	}
	b := &dcgmBackend{log: log, cleanup: cleanup, sem: make(chan struct{}, 1)}
	if err := b.setup(o); err != nil {
		b.release()
		return nil, err
	}
	return b, nil
}

func toShorts(ids []uint16) []dcgm.Short {
	out := make([]dcgm.Short, len(ids))
	for i, id := range ids {
		out[i] = dcgm.Short(id)
	}
	return out
}

// setup builds the entity group and the field watches.
func (b *dcgmBackend) setup(o DCGMOptions) error {
	ids, err := dcgm.GetSupportedDevices()
	if err != nil {
		return fmt.Errorf("%w: dcgm devices: %v", ErrNoDevice, err)
	}
	if len(ids) == 0 {
		return fmt.Errorf("%w: dcgm sees no supported GPU", ErrNoDevice)
	}
	tag := fmt.Sprintf("jobscope-%d", os.Getpid())
	if b.group, err = dcgm.CreateGroup(tag); err != nil {
		return fmt.Errorf("dcgm group: %w", err)
	}
	b.haveGroup = true
	for _, id := range ids {
		if err := dcgm.AddEntityToGroup(b.group, dcgm.FE_GPU, id); err != nil {
			return fmt.Errorf("dcgm group: %w", err)
		}
		b.gpus = append(b.gpus, dcgm.GroupEntityPair{EntityGroupId: dcgm.FE_GPU, EntityId: id})
	}
	b.readHierarchy()
	for _, in := range b.instances {
		if err := dcgm.AddEntityToGroup(b.group, dcgm.FE_GPU_I, in.entity); err != nil {
			return fmt.Errorf("dcgm group: %w", err)
		}
		b.instPairs = append(b.instPairs, dcgm.GroupEntityPair{EntityGroupId: dcgm.FE_GPU_I, EntityId: in.entity})
	}
	every := o.Interval.Microseconds()
	tele := toShorts(append(append([]uint16{}, dcgmIdentityFields...), dcgmTelemetryFields...))
	if err := b.watch(tag+"-telemetry", tele, every, 0, 1); err != nil {
		return err
	}
	b.gpuFields, b.instField = tele, toShorts(dcgmInstanceFields)
	if o.Profiling {
		prof := toShorts(dcgmProfilingFields)
		if err := b.watch(tag+"-profiling", prof, every, 0, 1); err != nil {
			// Typically DCGM_ST_PROFILING_NOT_SUPPORTED (pre-Volta, some
			// vGPU setups) or the profiling module being paused for Nsight.
			b.log.Warn("DCGM profiling unavailable; profiling metrics come from NVML GPM where the GPU has it", "err", err)
		} else {
			b.profiling = true
			b.gpuFields = append(b.gpuFields, prof...)
			b.instField = append(b.instField, prof...)
		}
	}
	// Xid: keep an hour of samples so every event between two scrapes is
	// seen, not only the latest one.
	if err := b.watch(tag+"-xid", []dcgm.Short{dcgmFieldXid}, every, 3600, 0); err != nil {
		b.log.Warn("DCGM Xid field not watched; no Xid metrics", "err", err)
	} else {
		b.xidFields, b.haveXid = b.fields[len(b.fields)-1], true
		// Start after what happened before jobscope started, as NVML's
		// event set does.
		if _, next, err := dcgm.GetValuesSince(b.group, b.xidFields, time.Time{}); err == nil && next.UnixMicro() > 0 {
			b.xidSince = next
		} else {
			b.xidSince = time.Now()
		}
	}
	b.nv = openNVMLHelper(b.log)
	return nil
}

func (b *dcgmBackend) watch(name string, ids []dcgm.Short, every int64, keepAge float64, keepSamples int32) error {
	fg, err := dcgm.FieldGroupCreate(name, ids)
	if err != nil {
		return fmt.Errorf("dcgm field group %s: %w", name, err)
	}
	if err := dcgm.WatchFieldsWithGroupEx(fg, b.group, every, keepAge, keepSamples); err != nil {
		_ = dcgm.FieldGroupDestroy(fg)
		return fmt.Errorf("dcgm watch %s: %w", name, err)
	}
	b.fields = append(b.fields, fg)
	return nil
}

// readHierarchy lists MIG GPU instances; a failure means "no MIG" (old
// drivers, no MIG-capable GPU) and is only logged at debug level.
func (b *dcgmBackend) readHierarchy() {
	h, err := dcgm.GetGPUInstanceHierarchy()
	if err != nil {
		b.log.Debug("DCGM MIG hierarchy not read", "err", err)
		return
	}
	ci := map[uint]int{} // GPU-instance entity -> first compute instance id
	for i := uint(0); i < h.Count && i < uint(len(h.EntityList)); i++ {
		e := h.EntityList[i]
		if e.Entity.EntityGroupId == dcgm.FE_GPU_CI && e.Parent.EntityGroupId == dcgm.FE_GPU_I {
			if _, ok := ci[e.Parent.EntityId]; !ok {
				ci[e.Parent.EntityId] = int(e.Info.NvmlComputeInstanceId)
			}
		}
	}
	for i := uint(0); i < h.Count && i < uint(len(h.EntityList)); i++ {
		e := h.EntityList[i]
		if e.Entity.EntityGroupId != dcgm.FE_GPU_I || e.Parent.EntityGroupId != dcgm.FE_GPU {
			continue
		}
		b.instances = append(b.instances, dcgmInstance{entity: e.Entity.EntityId, parent: e.Parent.EntityId,
			gi: int(e.Info.NvmlInstanceId), ci: ci[e.Entity.EntityId], parentIdx: int(e.Info.NvmlGpuIndex)})
	}
}

func (b *dcgmBackend) Name() string { return "dcgm" }

func (b *dcgmBackend) Close() error {
	b.sem <- struct{}{}
	defer func() { <-b.sem }()
	b.release()
	return nil
}

// release undoes setup in reverse; DCGM errors on the way out are moot.
func (b *dcgmBackend) release() {
	if b.nv != nil {
		b.nv.close()
		b.nv = nil
	}
	for _, fg := range b.fields {
		_ = dcgm.UnwatchFields(fg, b.group)
		_ = dcgm.FieldGroupDestroy(fg)
	}
	b.fields = nil
	if b.haveGroup {
		_ = dcgm.DestroyGroup(b.group)
		b.haveGroup = false
	}
	b.haveXid = false
	if b.cleanup != nil {
		b.cleanup()
		b.cleanup = nil
	}
}

// fromFV copies go-dcgm's value (a 4 KiB union) into the pure form.
func fromFV(fv dcgm.FieldValue_v2) dcgmValue {
	v := dcgmValue{Field: uint16(fv.FieldID), Type: byte(fv.FieldType), Status: fv.Status}
	switch fv.FieldType {
	case dcgm.DCGM_FT_INT64:
		v.Int = fv.Int64()
	case dcgm.DCGM_FT_DOUBLE:
		v.Float = fv.Float64()
	case dcgm.DCGM_FT_STRING:
		if fv.StringValue != nil {
			v.Str = *fv.StringValue
		} else {
			v.Str = fv.String()
		}
	}
	return v
}

// latest reads the cached latest values of fields on entities, grouped by
// entity id.
func latest(pairs []dcgm.GroupEntityPair, fields []dcgm.Short) (map[uint][]dcgmValue, error) {
	if len(pairs) == 0 {
		return nil, nil
	}
	fvs, err := dcgm.EntitiesGetLatestValues(pairs, fields, 0)
	if err != nil {
		return nil, err
	}
	out := make(map[uint][]dcgmValue, len(pairs))
	for _, fv := range fvs {
		out[fv.EntityID] = append(out[fv.EntityID], fromFV(fv))
	}
	return out, nil
}

func (b *dcgmBackend) Snapshot(ctx context.Context) (*Snapshot, error) {
	select {
	case b.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for another scrape's DCGM read: %w", ctx.Err())
	}
	defer func() { <-b.sem }()
	if b.cleanup == nil {
		return nil, errors.New("dcgm backend closed")
	}
	snap := &Snapshot{}
	gv, err := latest(b.gpus, b.gpuFields)
	if err != nil {
		// The host engine went away or the connection broke: the whole
		// scrape has nothing to report.
		return nil, fmt.Errorf("dcgm latest values: %w", err)
	}
	byGPU := map[uint]Device{}
	uuidOf := map[uint]string{}
	for _, p := range b.gpus {
		d := Device{Index: int(p.EntityId), Minor: -1, Values: map[Field]float64{}}
		failed, prof := applyDCGM(&d, gv[p.EntityId])
		if d.UUID == "" {
			snap.Errors = append(snap.Errors, CallError{Call: "field_uuid", UUID: fmt.Sprintf("dcgm gpu %d", p.EntityId), Err: errors.New("no UUID")})
			continue
		}
		for _, f := range failed {
			snap.Errors = append(snap.Errors, CallError{Call: dcgmFieldCall(f), UUID: d.UUID, Err: errors.New("DCGM field status not OK")})
		}
		if b.nv != nil && !d.MIGEnabled {
			// GPM only where DCGM gave no profiling value (profiling off,
			// refused, or paused for an Nsight session).
			b.nv.fill(snap, &d, !prof)
		}
		byGPU[p.EntityId], uuidOf[p.EntityId] = d, d.UUID
	}
	iv, err := latest(b.instPairs, b.instField)
	if err != nil {
		snap.Errors = append(snap.Errors, CallError{Call: "EntitiesGetLatestValues", UUID: "mig", Err: err})
	}
	for _, p := range b.gpus {
		d, ok := byGPU[p.EntityId]
		if !ok {
			continue
		}
		snap.Devices = append(snap.Devices, d)
		if d.MIGEnabled && err == nil {
			snap.Devices = append(snap.Devices, b.migDevices(snap, d, p.EntityId, iv)...)
		}
	}
	if b.haveXid {
		snap.Xid = b.readXid(snap, uuidOf)
	}
	return snap, nil
}

// migDevices builds the instances of one MIG-enabled GPU.
func (b *dcgmBackend) migDevices(snap *Snapshot, parent Device, gpuID uint, iv map[uint][]dcgmValue) []Device {
	var out []Device
	for _, in := range b.instances {
		if in.parent != gpuID {
			continue
		}
		d := Device{Index: parent.Index, Minor: parent.Minor, Model: parent.Model, ParentUUID: parent.UUID,
			GPUInstanceID: in.gi, ComputeInstanceID: in.ci, Values: map[Field]float64{}}
		failed, _ := applyDCGM(&d, iv[in.entity])
		// GPU-level string fields on an instance may name the parent;
		// only a MIG- UUID identifies the instance. NVML, when there,
		// gives the UUID and the instance's processes in one lookup.
		d.Model = parent.Model
		if !strings.HasPrefix(d.UUID, "MIG-") {
			d.UUID = ""
		}
		if b.nv != nil {
			b.nv.fillMIG(snap, parent.UUID, in.gi, in.ci, &d)
		}
		if d.UUID == "" {
			snap.Errors = append(snap.Errors, CallError{Call: "mig_uuid", UUID: parent.UUID,
				Err: fmt.Errorf("no UUID for GPU instance %d (DCGM did not give one and NVML could not)", in.gi)})
			continue
		}
		for _, f := range failed {
			snap.Errors = append(snap.Errors, CallError{Call: dcgmFieldCall(f), UUID: d.UUID, Err: errors.New("DCGM field status not OK")})
		}
		out = append(out, d)
	}
	return out
}

// readXid hands out the Xid samples recorded since the previous scrape.
func (b *dcgmBackend) readXid(snap *Snapshot, uuidOf map[uint]string) []XidEvent {
	fvs, next, err := dcgm.GetValuesSince(b.group, b.xidFields, b.xidSince)
	if err != nil {
		snap.Errors = append(snap.Errors, CallError{Call: "GetValuesSince", UUID: "xid", Err: err})
		return nil
	}
	// An empty reply may come back without a usable cursor: keep ours
	// rather than rewind to the epoch and replay the kept hour.
	if next.UnixMicro() > 0 && next.After(b.xidSince) {
		b.xidSince = next
	}
	samples := make([]dcgmXidSample, 0, len(fvs))
	for _, fv := range fvs {
		if fv.EntityGroupId == dcgm.FE_GPU && uint16(fv.FieldID) == dcgmFieldXid {
			samples = append(samples, dcgmXidSample{GPU: fv.EntityID, Value: fromFV(fv)})
		}
	}
	return xidEvents(samples, uuidOf)
}
