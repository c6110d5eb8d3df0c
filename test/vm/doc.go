// SPDX-License-Identifier: Apache-2.0

// Package vm holds no code: test/vm boots Debian VMs and runs shell
// assertions inside them (make vm-e2e). Its tests check those assertions
// themselves on the host, against made-up scrapes, where booting a VM is
// too heavy.
package vm
