// SPDX-License-Identifier: Apache-2.0

// Package flagval registers flags whose values are checked as they are
// parsed, so that a wrong value stops the start (exit status 2, one line)
// instead of silently turning a collector off at run time.
package flagval

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// value is a pflag.Value that parses and checks each value given.
type value[T any] struct {
	p     *T
	typ   string
	parse func(string) (T, error)
	show  func(T) string
}

func (v *value[T]) Set(s string) error {
	x, err := v.parse(s)
	if err != nil {
		return err
	}
	*v.p = x
	return nil
}

func (v *value[T]) String() string {
	if v.p == nil {
		return ""
	}
	return v.show(*v.p)
}

// Type names the value as pflag's own types do, so help and the man page
// read the same as for an unchecked flag.
func (v *value[T]) Type() string { return v.typ }

func register[T any](fs *pflag.FlagSet, p *T, name string, def T, usage, typ string, parse func(string) (T, error), show func(T) string) {
	*p = def
	fs.Var(&value[T]{p: p, typ: typ, parse: parse, show: show}, name, usage)
}

// String registers a string flag whose values pass check.
func String(fs *pflag.FlagSet, p *string, name, def, usage string, check func(string) error) {
	register(fs, p, name, def, usage, "string", func(s string) (string, error) {
		if err := check(s); err != nil {
			return "", err
		}
		return s, nil
	}, func(s string) string { return s })
}

// Enum registers a string flag that takes one of allowed.
func Enum(fs *pflag.FlagSet, p *string, name, def string, allowed []string, usage string) {
	String(fs, p, name, def, usage, func(s string) error {
		if !slices.Contains(allowed, s) {
			return fmt.Errorf("want one of %s", strings.Join(allowed, ", "))
		}
		return nil
	})
}

// Duration registers a duration flag of at least minimum (0: not negative;
// 1ns: positive).
func Duration(fs *pflag.FlagSet, p *time.Duration, name string, def, minimum time.Duration, usage string) {
	register(fs, p, name, def, usage, "duration", func(s string) (time.Duration, error) {
		d, err := time.ParseDuration(s)
		if err != nil {
			return 0, fmt.Errorf("not a duration (e.g. 30s, 5m)")
		}
		if d < minimum {
			return 0, fmt.Errorf("must be %s", atLeast(minimum))
		}
		return d, nil
	}, time.Duration.String)
}

func atLeast(minimum time.Duration) string {
	switch minimum {
	case 0:
		return "zero or more"
	case 1:
		return "positive"
	}
	return "at least " + minimum.String()
}

// Int registers an int flag of at least minimum.
func Int(fs *pflag.FlagSet, p *int, name string, def, minimum int, usage string) {
	register(fs, p, name, def, usage, "int", func(s string) (int, error) {
		n, err := strconv.Atoi(s)
		if err != nil {
			return 0, fmt.Errorf("not an integer")
		}
		if n < minimum {
			return 0, fmt.Errorf("must be at least %d", minimum)
		}
		return n, nil
	}, strconv.Itoa)
}

// Float registers a float flag of at least minimum.
func Float(fs *pflag.FlagSet, p *float64, name string, def, minimum float64, usage string) {
	register(fs, p, name, def, usage, "float", func(s string) (float64, error) {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return 0, fmt.Errorf("not a number")
		}
		if f < minimum || f != f {
			return 0, fmt.Errorf("must be at least %g", minimum)
		}
		return f, nil
	}, func(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) })
}

// Check adds check to a flag already registered with one of pflag's own
// types (string slices, maps): each value given is checked as written, then
// parsed by the flag's own value, whose type and getters stay pflag's.
func Check(fs *pflag.FlagSet, name string, check func(string) error) {
	f := fs.Lookup(name)
	if f == nil {
		panic("flagval.Check: no flag --" + name) // a programming error, met by every test
	}
	f.Value = &checked{Value: f.Value, check: check}
	if f.DefValue == "[]" {
		// An empty list says nothing as a default: pflag's help leaves it
		// out for its own types only, which the wrapper hides.
		f.DefValue = ""
	}
}

type checked struct {
	pflag.Value
	check func(string) error
}

func (c *checked) Set(s string) error {
	if err := c.check(s); err != nil {
		return err
	}
	return c.Value.Set(s)
}
