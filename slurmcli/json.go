// SPDX-License-Identifier: Apache-2.0

package slurmcli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// The JSON shapes differ between Slurm versions: 22.05 (openapi v0.0.38)
// prints plain numbers and state strings, 23.02 and later print numbers as
// {"set":true,"infinite":false,"number":N} and states as lists. These types
// read both, so one parser serves every version with --json.

// flexNum is a number, null, or a {set, infinite, number} object.
type flexNum struct {
	V   float64
	Set bool
}

func (f *flexNum) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case len(b) == 0 || string(b) == "null":
		*f = flexNum{}
		return nil
	case b[0] == '{':
		var o struct {
			Set      bool    `json:"set"`
			Infinite bool    `json:"infinite"`
			Number   float64 `json:"number"`
		}
		if err := json.Unmarshal(b, &o); err != nil {
			return err
		}
		*f = flexNum{V: o.Number, Set: o.Set && !o.Infinite}
		return nil
	case b[0] == '"':
		// A few fields are strings in some versions; treat as unset.
		*f = flexNum{}
		return nil
	}
	// Plain numbers are most fields of every job: parse them directly
	// (the decoder has already checked the JSON syntax).
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		if b[0] == 't' || b[0] == 'f' {
			*f = flexNum{} // a boolean where a number was expected
			return nil
		}
		return fmt.Errorf("number %q: %w", b, err)
	}
	*f = flexNum{V: v, Set: true}
	return nil
}

// flexStrings is a string or a list of strings.
type flexStrings []string

func (f *flexStrings) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case len(b) == 0 || string(b) == "null":
		*f = nil
		return nil
	case b[0] == '[':
		var l []string
		if err := json.Unmarshal(b, &l); err != nil {
			return err
		}
		*f = l
		return nil
	}
	if len(b) >= 2 && b[0] == '"' && bytes.IndexByte(b, '\\') < 0 {
		*f = flexStrings{string(b[1 : len(b)-1])}
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*f = flexStrings{s}
	return nil
}

// slurmErrors is the "errors" list every --json output carries.
type slurmErrors []struct {
	Error       string `json:"error"`
	Description string `json:"description"`
	Number      int    `json:"error_number"`
	ErrorCode   int    `json:"errno"`
}

func (e slurmErrors) err() error {
	if len(e) == 0 {
		return nil
	}
	msg := e[0].Error
	if msg == "" {
		msg = e[0].Description
	}
	return fmt.Errorf("slurm reported %d error(s), first: %q", len(e), msg)
}

// ErrJSONShape marks JSON output without the list jobscope reads (a
// version whose layout differs): in auto mode the command's text form is
// used from then on.
var ErrJSONShape = errors.New("JSON output without the expected list")

// decodeList decodes a Slurm command's --json output into v; what names
// the output in errors ("squeue json") and list the list jobscope reads.
// has says whether that list came: without it the output is the errors
// Slurm reported (slurmctld down), or a layout this parser does not know
// (ErrJSONShape).
func decodeList(r io.Reader, what, list string, v any, has func() bool, errs func() slurmErrors) error {
	if err := json.NewDecoder(r).Decode(v); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if has() {
		return nil
	}
	if err := errs().err(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return fmt.Errorf("%s: no %q list: %w", what, list, ErrJSONShape)
}
