package power

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// ErrTimeout says a command was killed at its timeout.
var ErrTimeout = errors.New("command timed out")

// maxOutput bounds what is kept of a command's stdout and stderr.
const maxOutput = 64 << 10

// RunCommand runs argv (never through a shell) in its own process group,
// killed whole at the timeout, and returns its stdout. A failure carries
// the start of stderr so the log says what the BMC tool said.
func RunCommand(ctx context.Context, argv []string, timeout time.Duration) ([]byte, error) {
	if len(argv) == 0 {
		return nil, errors.New("empty command")
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// Children that keep the pipes open must not hold Wait forever.
	cmd.WaitDelay = time.Second
	var stdout, stderr capped
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() == context.DeadlineExceeded {
		return nil, fmt.Errorf("%s: %w after %s", argv[0], ErrTimeout, timeout)
	}
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 200 {
			msg = msg[:200]
		}
		return nil, fmt.Errorf("%s: %w (stderr: %q)", argv[0], err, msg)
	}
	return stdout.Bytes(), nil
}

// capped keeps the first maxOutput bytes and drops the rest, so a chatty
// command cannot grow the exporter's memory.
type capped struct{ bytes.Buffer }

func (c *capped) Write(p []byte) (int, error) {
	if room := maxOutput - c.Len(); room > 0 {
		if len(p) > room {
			c.Buffer.Write(p[:room])
		} else {
			c.Buffer.Write(p)
		}
	}
	return len(p), nil
}
