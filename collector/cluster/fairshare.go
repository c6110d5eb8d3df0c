// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"math"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jobscope/jobscope/collector"
	"github.com/jobscope/jobscope/slurmcli"
)

// FairshareFactory describes the fairshare collector (controller mode).
func FairshareFactory(sh *shared) collector.Factory {
	return slurmFactory(sh, "slurm_fairshare",
		"Fairshare factors, shares and usage per account and user, from sshare (cached)",
		slurmcli.SourceShares, func(c *slurmcli.Cache) slurmCollector { return newSlurmFairshare(c) })
}

type slurmFairshare struct {
	source

	fairshare, levelFS, normShares, rawShares, rawUsage, effUsage *collector.Desc
}

func newSlurmFairshare(c *slurmcli.Cache) *slurmFairshare {
	const src = " From sshare -a -l, cached per --slurm.slow-poll-interval; user is empty on account rows."
	labels := []string{"account", "user"}
	d := func(name, help string) *collector.Desc { return collector.NewDesc(name, help+src, labels...) }
	return &slurmFairshare{
		source:     newSource(c),
		fairshare:  d("slurm_share_fairshare", "Fair-share factor of a user association (0 to 1, higher means more priority)."),
		levelFS:    d("slurm_share_level_fs", "LevelFS: normalized shares over effective usage among siblings; +Inf with no usage."),
		normShares: d("slurm_share_normalized_shares", "Shares of the association as a fraction of its parent's (NormShares)."),
		rawShares:  d("slurm_share_raw_shares", "Shares configured for the association (RawShares)."),
		rawUsage:   d("slurm_share_raw_usage", "Decayed usage of the association in TRES-billing-seconds (RawUsage)."),
		effUsage:   d("slurm_share_effective_usage", "Effective usage of the association as a fraction of the cluster's (EffectvUsage)."),
	}
}

func (c *slurmFairshare) Collect(s *collector.Scrape, ch chan<- prometheus.Metric) error {
	shares, ok, err := read(c.status, s, c.cache, c.cache.Shares, slurmcli.SourceShares, ch)
	if !ok {
		return err
	}
	seen := map[slurmLabelPair]bool{}
	for _, sh := range shares {
		k := slurmLabelPair{slurmLabel(sh.Account), slurmLabel(sh.User)}
		if seen[k] {
			// Per-partition associations repeat account and user; the
			// first row is the one sshare sorts first.
			continue
		}
		seen[k] = true
		for _, m := range []struct {
			d *collector.Desc
			v float64
		}{
			{c.fairshare, sh.FairShare}, {c.levelFS, sh.LevelFS}, {c.normShares, sh.NormShares},
			{c.rawShares, sh.RawShares}, {c.rawUsage, sh.RawUsage}, {c.effUsage, sh.EffectiveUsage},
		} {
			if math.IsNaN(m.v) {
				continue // sshare left it empty
			}
			ch <- m.d.Gauge(m.v, k[0], k[1])
		}
	}
	return err
}

func (c *slurmFairshare) descs() []*collector.Desc {
	return []*collector.Desc{c.status.up, c.status.age, c.fairshare, c.levelFS, c.normShares, c.rawShares, c.rawUsage, c.effUsage}
}
