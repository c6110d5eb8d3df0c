// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/jobscope/jobscope/collector"
	"github.com/jobscope/jobscope/slurmcli"
)

// LicensesFactory describes the license collector.
func LicensesFactory(sh *shared) collector.Factory {
	return slurmFactory(sh, "slurm_licenses",
		"License pools: total, used and reserved, local (slurm.conf Licenses=) and remote (sacctmgr resources), from scontrol show licenses (cached)",
		slurmcli.SourceLicenses, func(c *slurmcli.Cache) slurmCollector { return newSlurmLicenses(c) })
}

type slurmLicenses struct {
	source

	total, used, reserved *collector.Desc
}

func newSlurmLicenses(c *slurmcli.Cache) *slurmLicenses {
	const src = " From scontrol show licenses, cached per --slurm.slow-poll-interval; remote licenses are named name@server."
	d := func(name, help string) *collector.Desc { return collector.NewDesc(name, help+src, "license") }
	return &slurmLicenses{
		source:   newSource(c),
		total:    d("slurm_license_configured", "Licenses in the pool (for a remote license, the share this cluster may use)."),
		used:     d("slurm_license_used", "Licenses of the pool held by running jobs."),
		reserved: d("slurm_license_reserved", "Licenses of the pool held for reservations."),
	}
}

func (c *slurmLicenses) descs() []*collector.Desc {
	return []*collector.Desc{c.status.up, c.status.age, c.total, c.used, c.reserved}
}

func (c *slurmLicenses) Collect(s *collector.Scrape, ch chan<- prometheus.Metric) error {
	lics, ok, err := read(c.status, s, c.cache, c.cache.Licenses, slurmcli.SourceLicenses, ch)
	if !ok {
		return err
	}
	seen := map[string]bool{}
	for _, l := range lics {
		name := slurmLabel(l.Name)
		if seen[name] {
			continue
		}
		seen[name] = true
		ch <- c.total.Gauge(l.Total, name)
		ch <- c.used.Gauge(l.Used, name)
		ch <- c.reserved.Gauge(l.Reserved, name)
	}
	return err
}
