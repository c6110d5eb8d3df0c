// SPDX-License-Identifier: Apache-2.0

package slurmcli

import "io"

// parseSqueueJSONFull is the decoder ParseSqueueJSON replaced, kept as the
// reference for the stream scanner: encoding/json decodes the whole output
// at once into the same fields, which become Jobs the same way. What the
// comparison checks is the scanner's reading of the fields; the goldens
// check what the fields become.
func parseSqueueJSONFull(r io.Reader) ([]Job, error) {
	var in struct {
		Errors slurmErrors `json:"errors"`
		Jobs   []squeueJob `json:"jobs"`
	}
	if err := decodeList(r, "squeue json", "jobs", &in, func() bool { return in.Jobs != nil }, func() slurmErrors { return in.Errors }); err != nil {
		return nil, err
	}
	jobs := make([]Job, 0, len(in.Jobs))
	shared := interner{}
	for i := range in.Jobs {
		jobs = append(jobs, in.Jobs[i].job(&shared))
	}
	return jobs, nil
}
