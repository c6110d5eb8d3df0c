// SPDX-License-Identifier: Apache-2.0

package power

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jobscope/jobscope/internal/cmdrun"
)

// ErrTimeout says a command was killed at its timeout.
var ErrTimeout = cmdrun.ErrTimeout

// maxOutput bounds what is kept of a command's stdout and stderr.
const maxOutput = 64 << 10

// RunCommand runs argv (never through a shell) in its own process group,
// killed whole at the timeout, and returns its stdout. A failure carries
// the start of stderr so the log says what the BMC tool said.
func RunCommand(ctx context.Context, argv []string, timeout time.Duration) ([]byte, error) {
	if len(argv) == 0 {
		return nil, errors.New("empty command")
	}
	res, err := cmdrun.Run(ctx, cmdrun.Spec{Path: argv[0], Args: argv[1:], Timeout: timeout,
		MaxStdout: maxOutput, MaxStderr: 200, WaitDelay: time.Second})
	if err != nil && res.Cause == cmdrun.Exit {
		return nil, fmt.Errorf("%s: %w (stderr: %q)", argv[0], err, strings.TrimSpace(res.Stderr))
	}
	return res.Stdout, err
}
