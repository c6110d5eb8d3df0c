package collector

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jobscope/jobscope/slurmcli"
)

// SlurmLicensesFactory describes the license collector.
func SlurmLicensesFactory() Factory {
	return slurmFactory("slurm_licenses",
		"License pools: total, used and reserved, local (slurm.conf Licenses=) and remote (sacctmgr resources), from scontrol show licenses (cached)",
		slurmcli.SourceLicenses, func(c *slurmcli.Cache) slurmCollector { return newSlurmLicenses(c) })
}

type slurmLicenses struct {
	cache  *slurmcli.Cache
	status slurmSourceStatus

	total, used, reserved *prometheus.Desc
}

func newSlurmLicenses(c *slurmcli.Cache) *slurmLicenses {
	const src = " From scontrol show licenses, cached per --slurm.poll-interval; remote licenses are named name@server."
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(name, help+src, []string{"license"}, nil)
	}
	return &slurmLicenses{
		cache:    c,
		status:   newSlurmSourceStatus(),
		total:    d("slurm_license_configured", "Licenses in the pool (for a remote license, the share this cluster may use)."),
		used:     d("slurm_license_used", "Licenses of the pool held by running jobs."),
		reserved: d("slurm_license_reserved", "Licenses of the pool held for reservations."),
	}
}

func (c *slurmLicenses) descs() []*prometheus.Desc {
	return []*prometheus.Desc{c.status.up, c.status.age, c.total, c.used, c.reserved}
}

func (c *slurmLicenses) Collect(s *Scrape, ch chan<- prometheus.Metric) error {
	v, ok, err := c.status.read(s, c.cache, slurmcli.SourceLicenses, ch)
	if !ok {
		return err
	}
	lics, isLics := v.([]slurmcli.License)
	if !isLics {
		return fmt.Errorf("slurm licenses: snapshot holds %T", v)
	}
	seen := map[string]bool{}
	for _, l := range lics {
		name := slurmLabel(l.Name)
		if seen[name] {
			continue
		}
		seen[name] = true
		ch <- prometheus.MustNewConstMetric(c.total, prometheus.GaugeValue, l.Total, name)
		ch <- prometheus.MustNewConstMetric(c.used, prometheus.GaugeValue, l.Used, name)
		ch <- prometheus.MustNewConstMetric(c.reserved, prometheus.GaugeValue, l.Reserved, name)
	}
	return err
}
