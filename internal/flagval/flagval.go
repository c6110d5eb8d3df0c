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

// AliasAnnotation is the pflag annotation Alias puts on a deprecated name:
// the flag it stands for, so that a check of flag names (a collector's
// namespace) can tell an old name kept for one release from a new flag.
const AliasAnnotation = "jobscope.alias-of"

// Alias registers old as a deprecated name of the flag newName, for the
// release after a rename: a value given under old is checked and stored by
// newName's own value, and newName counts as given (fs.Changed), so every
// use of old behaves as newName did. pflag prints one line to the flag
// set's output at each use of old; --help and the man page leave it out.
func Alias(fs *pflag.FlagSet, old, newName string) {
	target := fs.Lookup(newName)
	if target == nil {
		panic("flagval.Alias: no flag --" + newName) // a programming error, met by every test
	}
	fs.Var(&alias{target: target}, old, "Deprecated: use --"+newName+".")
	f := fs.Lookup(old)
	f.NoOptDefVal = target.NoOptDefVal // --old alone, as --new alone (bools)
	f.DefValue = target.DefValue
	_ = fs.SetAnnotation(old, AliasAnnotation, []string{newName})
	_ = fs.MarkDeprecated(old, "use --"+newName+" instead (the old name goes in the next release)")
}

// alias is the value of a deprecated name: it writes through to the flag
// it stands for.
type alias struct{ target *pflag.Flag }

func (a *alias) Set(s string) error {
	if err := a.target.Value.Set(s); err != nil {
		return err
	}
	// Code that asks whether the new name was given (a default that
	// depends on it) must see the old name's use as the same.
	a.target.Changed = true
	return nil
}

func (a *alias) String() string { return a.target.Value.String() }
func (a *alias) Type() string   { return a.target.Value.Type() }
