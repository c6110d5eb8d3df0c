// SPDX-License-Identifier: Apache-2.0

package notify

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v2"
)

// DefaultConfigFile is where the packaged unit reads its settings.
const DefaultConfigFile = "/etc/jobscope/notify.yml"

// Config is notify.yml. Keys are the interface docs/notify.md documents
// and the e2e writes; UnmarshalStrict refuses any other key so a typo is an
// error at start, not a silently ignored setting.
type Config struct {
	Listen           string            `yaml:"listen"`
	WebhookTokenFile string            `yaml:"webhook_token_file"`
	SMTP             SMTPConfig        `yaml:"smtp"`
	AddressTemplate  string            `yaml:"address_template"`
	DryRun           *bool             `yaml:"dry_run"`
	Period           model.Duration    `yaml:"period"`
	DigestWait       model.Duration    `yaml:"digest_wait"`
	OptOutFile       string            `yaml:"opt_out_file"`
	ReportCommand    string            `yaml:"report_command"`
	Admins           []string          `yaml:"admins"`
	StateDir         string            `yaml:"state_dir"`
	Slurm            SlurmConfig       `yaml:"slurm"`
	Retry            RetryConfig       `yaml:"retry"`
	Actions          map[string]Action `yaml:"actions"`
}

// SMTPConfig says how to reach the site's mail relay.
type SMTPConfig struct {
	Host         string         `yaml:"host"`
	Port         int            `yaml:"port"`
	StartTLS     string         `yaml:"starttls"` // opportunistic | required | none
	Username     string         `yaml:"username"`
	PasswordFile string         `yaml:"password_file"`
	From         string         `yaml:"from"`
	Timeout      model.Duration `yaml:"timeout"`
}

// SlurmConfig says where Slurm's client commands are.
type SlurmConfig struct {
	BinDir string `yaml:"bin_dir"`
	// Timeout bounds one command (addition; default 10s).
	Timeout model.Duration `yaml:"timeout"`
}

// RetryConfig is the backoff of failed lookups and sends.
type RetryConfig struct {
	Initial model.Duration `yaml:"initial"`
	Max     model.Duration `yaml:"max"`
	// Attempts is how many tries a message or a lookup gets before it is
	// given up, logged and counted as failed (addition; default 12, about
	// 4 hours with the default backoff).
	Attempts int `yaml:"attempts"`
}

// Action is what happens to a job whose alert still fires Grace after its
// owner was warned.
type Action struct {
	Action string         `yaml:"action"` // cancel | notify-admins
	Grace  model.Duration `yaml:"grace"`
}

// Action names.
const (
	ActionCancel       = "cancel"
	ActionNotifyAdmins = "notify-admins"
)

// maxAlertName bounds an alert name: config keys and label values alike.
const maxAlertName = 128

// Defaults fills what the file left out.
func (c *Config) defaults() {
	set := func(d *model.Duration, v time.Duration) {
		if *d == 0 {
			*d = model.Duration(v)
		}
	}
	if c.Listen == "" {
		c.Listen = "127.0.0.1:10819"
	}
	if c.SMTP.Host == "" {
		c.SMTP.Host = "127.0.0.1"
	}
	if c.SMTP.Port == 0 {
		c.SMTP.Port = 25
	}
	if c.SMTP.StartTLS == "" {
		c.SMTP.StartTLS = "opportunistic"
	}
	set(&c.SMTP.Timeout, 10*time.Second)
	if c.DryRun == nil {
		t := true
		c.DryRun = &t
	}
	set(&c.Period, 24*time.Hour)
	set(&c.DigestWait, time.Minute)
	if c.ReportCommand == "" {
		c.ReportCommand = "jobscope report {jobid}"
	}
	if c.StateDir == "" {
		c.StateDir = "/var/lib/jobscope/notify"
	}
	set(&c.Slurm.Timeout, 10*time.Second)
	set(&c.Retry.Initial, 30*time.Second)
	set(&c.Retry.Max, 30*time.Minute)
	if c.Retry.Attempts == 0 {
		c.Retry.Attempts = 12
	}
}

// validate checks every value once, at start, so nothing fails later.
func (c *Config) validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if c.WebhookTokenFile == "" {
		bad("webhook_token_file is required: Alertmanager authenticates with it")
	}
	if p, ok := strings.CutPrefix(c.Listen, "unix:"); ok {
		if p == "" {
			bad("listen %q: no socket path", c.Listen)
		}
	} else if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		bad("listen %q: %v", c.Listen, err)
	}
	switch c.SMTP.StartTLS {
	case "opportunistic", "required", "none":
	default:
		bad("smtp.starttls %q: want opportunistic, required or none", c.SMTP.StartTLS)
	}
	if c.SMTP.Port <= 0 || c.SMTP.Port > 65535 {
		bad("smtp.port %d out of range", c.SMTP.Port)
	}
	if c.SMTP.From == "" {
		bad("smtp.from is required")
	} else if _, err := checkAddress(c.SMTP.From); err != nil {
		bad("smtp.from: %v", err)
	}
	if strings.Count(c.AddressTemplate, "{user}") != 1 {
		bad("address_template %q: must contain {user} once", c.AddressTemplate)
	} else if _, err := checkAddress(strings.Replace(c.AddressTemplate, "{user}", "alice", 1)); err != nil {
		bad("address_template: %v", err)
	}
	for _, a := range c.Admins {
		if _, err := checkAddress(a); err != nil {
			bad("admins: %v", err)
		}
	}
	if c.Retry.Initial > c.Retry.Max {
		bad("retry.initial %s is longer than retry.max %s", c.Retry.Initial, c.Retry.Max)
	}
	if c.Retry.Attempts < 1 {
		bad("retry.attempts %d: want at least 1", c.Retry.Attempts)
	}
	for name, a := range c.Actions {
		if !validAlertName(name) {
			bad("actions: alert name %q", name)
		}
		switch a.Action {
		case ActionCancel, ActionNotifyAdmins:
		default:
			bad("actions.%s.action %q: want cancel or notify-admins", name, a.Action)
		}
		if a.Grace <= 0 {
			bad("actions.%s.grace: a positive duration is required (the owner's time to react)", name)
		}
		if a.Action == ActionNotifyAdmins && len(c.Admins) == 0 {
			bad("actions.%s: notify-admins with no admins", name)
		}
	}
	if c.StateDir == "" {
		bad("state_dir is required")
	}
	return errors.Join(errs...)
}

// LoadConfig reads and checks a notify.yml.
func LoadConfig(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseConfig(b)
}

// ParseConfig parses notify.yml's content, fills defaults and validates.
func ParseConfig(b []byte) (*Config, error) {
	var c Config
	if err := yaml.UnmarshalStrict(b, &c); err != nil {
		return nil, fmt.Errorf("notify config: %w", err)
	}
	c.defaults()
	if err := c.validate(); err != nil {
		return nil, fmt.Errorf("notify config: %w", err)
	}
	return &c, nil
}

// readSecret reads a one-line secret file (token, password); an empty
// secret is an error, never "no authentication".
func readSecret(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "", fmt.Errorf("%s is empty", path)
	}
	return s, nil
}

func validAlertName(s string) bool {
	if s == "" || len(s) > maxAlertName {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == ':') {
			return false
		}
	}
	return true
}
