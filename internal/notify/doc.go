// SPDX-License-Identifier: Apache-2.0

// Package notify implements `jobscope notify`: a receiver for
// Alertmanager's webhook that finds each alerted job's owner in Slurm (never
// in the alert's labels), writes one digest per user and period, sends it
// through the site's SMTP relay and, where the site enables it, acts on the
// job (scancel) after a grace period. It reads Slurm and its own state
// directory only, never the node's readers. docs/notify.md describes it.
package notify
