// SPDX-License-Identifier: Apache-2.0

package main

import (
	"encoding"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/lmittmann/tint"

	"github.com/jobscope/jobscope/internal/termsafe"
)

func newLogger(level, format string, w io.Writer) (*slog.Logger, error) {
	f, isFile := w.(*os.File)
	return buildLogger(level, format, w, isFile && isTerminal(f))
}

// buildLogger is newLogger with the terminal test done: colour is on only
// where stderr is a terminal.
func buildLogger(level, format string, w io.Writer, color bool) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("invalid --log.level %q: use debug, info, warn or error", level)
	}
	switch format {
	case "json":
		return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l, ReplaceAttr: safeAttr(false)})), nil
	case "text", "logfmt":
		return slog.New(tint.NewTextHandler(w, &tint.Options{Level: l, NoColor: !color, ReplaceAttr: safeAttr(true),
			TimeFormat: "2006-01-02T15:04:05.000Z07:00"})), nil
	}
	return nil, fmt.Errorf("invalid --log.format %q: use text or json", format)
}

// safeAttr makes every key, string and error of a log line (the message
// included) terminal-safe: log lines quote what a job's user wrote
// (SLURM_JOB_USER, job names, paths, Slurm's echo of them) and are read on
// admins' terminals. For the text handler a value of any other kind is
// written as the handler would (%+v, or its text form), then made safe; the
// JSON handler keeps such values structured (it escapes C0 controls itself).
// Numbers, times and durations carry no text. The level and source stay as
// they are: the handlers read them by type.
func safeAttr(text bool) func(groups []string, a slog.Attr) slog.Attr {
	return func(groups []string, a slog.Attr) slog.Attr {
		a.Key = termsafe.Log(a.Key)
		switch a.Value.Kind() {
		case slog.KindString:
			a.Value = slog.StringValue(termsafe.Log(a.Value.String()))
		case slog.KindAny:
			v := a.Value.Any()
			if err, ok := v.(error); ok {
				a.Value = slog.StringValue(termsafe.Log(fmt.Sprint(err))) // fmt: a nil *T error is "<nil>", no panic
			} else if text && !(len(groups) == 0 && (a.Key == slog.LevelKey || a.Key == slog.SourceKey)) {
				a.Value = slog.StringValue(termsafe.Log(anyText(v)))
			}
		}
		return a
	}
}

// anyText is the text tint writes for a value of KindAny; a method that
// panics (a nil pointer) gives "<nil>", as there.
func anyText(v any) (s string) {
	defer func() {
		if recover() != nil {
			s = "<nil>"
		}
	}()
	if m, ok := v.(encoding.TextMarshaler); ok {
		if b, err := m.MarshalText(); err == nil {
			return string(b)
		}
	}
	if b, ok := v.([]byte); ok {
		return string(b)
	}
	return fmt.Sprintf("%+v", v)
}

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
