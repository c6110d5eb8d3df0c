// SPDX-License-Identifier: Apache-2.0

// Package power reads node power meters (RAPL through powercap sysfs, the
// BMC through IPMI DCMI), splits node energy among jobs (pure functions and
// a ledger that keeps per-job counters between scrapes) and knows grid
// emission factors (static, an embedded per-country table, live providers).
//
// Nothing here touches Prometheus or job discovery: the collector in
// collector/power*.go feeds it readings and turns its answers into metrics,
// so every step can be tested with exact numbers.
package power
