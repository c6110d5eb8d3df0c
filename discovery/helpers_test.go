// SPDX-License-Identifier: Apache-2.0

package discovery

import (
	"bytes"
	"io"
)

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }
