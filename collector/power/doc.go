// SPDX-License-Identifier: Apache-2.0

// Package power is the power collector: node power from RAPL and IPMI, and
// per-job energy and emissions split by the ledger of package power.
package power
