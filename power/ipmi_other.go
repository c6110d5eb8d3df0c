// SPDX-License-Identifier: Apache-2.0

//go:build !linux

package power

import "fmt"

// OpenIPMIDevice: in-band IPMI is implemented for Linux's ipmi_devintf only.
func OpenIPMIDevice(path string) (IPMIDevice, error) {
	return nil, fmt.Errorf("%s: in-band IPMI needs Linux: %w", path, ErrNoIPMIDevice)
}
