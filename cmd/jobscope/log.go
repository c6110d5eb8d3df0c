package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/lmittmann/tint"
)

func newLogger(level, format string, w io.Writer) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("invalid --log.level %q: use debug, info, warn or error", level)
	}
	switch format {
	case "json":
		return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l})), nil
	case "text", "logfmt":
		f, isFile := w.(*os.File)
		color := isFile && isTerminal(f)
		return slog.New(tint.NewTextHandler(w, &tint.Options{Level: l, NoColor: !color, TimeFormat: "2006-01-02T15:04:05.000Z07:00"})), nil
	}
	return nil, fmt.Errorf("invalid --log.format %q: use text or json", format)
}

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
