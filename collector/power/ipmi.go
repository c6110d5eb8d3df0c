// SPDX-License-Identifier: Apache-2.0

package power

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"

	"github.com/jobscope/jobscope/collector"
	"github.com/jobscope/jobscope/power"
)

// IPMI sources, chosen by --collector.power.ipmi.
const (
	IPMIAuto    = "auto"    // in-band when a device opens, else the command if set
	IPMIInBand  = "inband"  // the device only
	IPMICommand = "command" // --collector.power.ipmi-command only
	IPMIOff     = "off"
)

// ipmiErr tags a failed reading with its problem cause, so the log and
// jobscope_collector_errors_total say which path failed.
type ipmiErr struct {
	cause string
	err   error
}

func (e *ipmiErr) Error() string { return e.err.Error() }
func (e *ipmiErr) Unwrap() error { return e.err }

func ipmiCause(err error) string {
	var e *ipmiErr
	if errors.As(err, &e) {
		return e.cause
	}
	return "ipmi_command"
}

// ipmiSource picks how the BMC is read and returns the fetch the poller
// runs (nil: no IPMI). An absent or forbidden device is not an error: the
// same flags go to every node of a cluster, and some have no BMC; it is
// logged once here, with what to change.
func ipmiSource(o Options, log *slog.Logger) (func(context.Context) (power.DCMIReading, error), error) {
	mode := o.IPMIMode
	if mode == "" { // options built in code: what the flags meant before --collector.power.ipmi
		mode = IPMIOff
		if o.IPMICommand != "" {
			mode = IPMICommand
		}
	}
	var argv []string
	if o.IPMICommand != "" {
		argv = strings.Fields(o.IPMICommand)
	}
	command := func(ctx context.Context) (power.DCMIReading, error) {
		out, err := power.RunCommand(ctx, argv, o.IPMITimeout)
		if err == nil {
			var d power.DCMIReading
			d, err = power.ParseDCMI(bytes.NewReader(out))
			if err == nil {
				return d, nil
			}
		}
		return power.DCMIReading{}, &ipmiErr{"ipmi_command", err}
	}
	switch mode {
	case IPMIOff:
		return nil, nil
	case IPMICommand:
		if argv == nil {
			return nil, errors.New("--collector.power.ipmi=command needs --collector.power.ipmi-command")
		}
		return command, nil
	case IPMIAuto, IPMIInBand:
	default:
		return nil, fmt.Errorf("unknown --collector.power.ipmi %q (want auto, inband, command or off)", mode)
	}

	open := o.IPMIOpen
	if open == nil {
		open = power.OpenIPMIDevice
	}
	paths := power.DefaultIPMIDevices
	if o.IPMIDevice != "" {
		paths = []string{o.IPMIDevice}
	}
	fallback := "no IPMI series"
	if mode == IPMIAuto && argv != nil {
		fallback = "using --collector.power.ipmi-command"
	}
	path, err := power.FindIPMIDevice(paths, open)
	if err != nil {
		level := slog.LevelInfo // no BMC: normal on many nodes
		if errors.Is(err, power.ErrIPMIPermission) || !errors.Is(err, power.ErrNoIPMIDevice) {
			level = slog.LevelWarn
		}
		log.Log(context.Background(), level, "in-band IPMI unavailable: "+fallback, "collector", "power", "err", err)
		if fallback == "no IPMI series" {
			return nil, nil
		}
		return command, nil
	}
	log.Info("IPMI DCMI power read in-band", "collector", "power", "device", path)
	inband := power.NewInBand(path, o.IPMITimeout)
	inband.Open = open
	if mode == IPMIInBand || argv == nil {
		return func(ctx context.Context) (power.DCMIReading, error) {
			d, err := inband.Read(ctx)
			if err != nil {
				return d, &ipmiErr{"ipmi_inband", err}
			}
			return d, nil
		}, nil
	}
	// auto with a command: a BMC that refuses the DCMI command itself will
	// never answer it, so the command takes over for good (it may talk to
	// the BMC another way, or be a site wrapper).
	var fellBack atomic.Bool
	return func(ctx context.Context) (power.DCMIReading, error) {
		if !fellBack.Load() {
			d, err := inband.Read(ctx)
			if err == nil {
				return d, nil
			}
			if !errors.Is(err, power.ErrUnsupported) {
				return d, &ipmiErr{"ipmi_inband", err}
			}
			fellBack.Store(true)
			log.Warn("in-band IPMI: BMC refuses DCMI Get Power Reading; using --collector.power.ipmi-command from now on", "collector", "power", "err", err)
		}
		return command(ctx)
	}, nil
}

// envLogger discards when the Env has none (tests).
func envLogger(env *collector.Env) *slog.Logger {
	if env != nil && env.Logger != nil {
		return env.Logger
	}
	return slog.New(slog.DiscardHandler)
}
