// SPDX-License-Identifier: Apache-2.0

package slurmcli

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// License is one license pool of `scontrol show licenses`: local ones from
// slurm.conf (Licenses=), remote ones from slurmdbd (sacctmgr add
// resource), named "name@server".
type License struct {
	Name     string
	Total    float64
	Used     float64
	Reserved float64 // held for reservations; 0 where Slurm does not say
	Remote   bool
}

// LicenseTextArgs and LicenseJSONArgs list the licenses (--json from 23.02).
var (
	LicenseTextArgs = []string{"-o", "show", "licenses"}
	LicenseJSONArgs = []string{"show", "licenses", "--json"}
)

// ParseLicensesText reads `scontrol show licenses`, with or without -o.
func ParseLicensesText(r io.Reader) ([]License, error) {
	recs, err := parseScontrolBlocks(r, "LicenseName")
	if err != nil {
		return nil, err
	}
	out := make([]License, 0, len(recs))
	for _, f := range recs {
		l := License{Name: f["LicenseName"], Remote: strings.EqualFold(f["Remote"], "yes")}
		for _, v := range []struct {
			key string
			dst *float64
			opt bool
		}{{"Total", &l.Total, false}, {"Used", &l.Used, false}, {"Reserved", &l.Reserved, true}} {
			s, ok := f[v.key]
			if !ok && v.opt {
				continue
			}
			if *v.dst, err = strconv.ParseFloat(s, 64); err != nil {
				return nil, fmt.Errorf("license %s: %s %q", l.Name, v.key, s)
			}
		}
		out = append(out, l)
	}
	return out, nil
}

type licensesJSON struct {
	Errors   slurmErrors `json:"errors"`
	Licenses []struct {
		Name     string  `json:"LicenseName"`
		Total    flexNum `json:"Total"`
		Used     flexNum `json:"Used"`
		Reserved flexNum `json:"Reserved"`
		Remote   bool    `json:"Remote"`
	} `json:"licenses"`
}

// ParseLicensesJSON reads `scontrol show licenses --json`.
func ParseLicensesJSON(r io.Reader) ([]License, error) {
	var in licensesJSON
	if err := decodeList(r, "license json", "licenses", &in, func() bool { return in.Licenses != nil }, func() slurmErrors { return in.Errors }); err != nil {
		return nil, err
	}
	out := make([]License, 0, len(in.Licenses))
	for _, x := range in.Licenses {
		out = append(out, License{Name: x.Name, Total: x.Total.V, Used: x.Used.V, Reserved: x.Reserved.V, Remote: x.Remote})
	}
	return out, nil
}
