// SPDX-License-Identifier: Apache-2.0

package notify

import (
	"context"
	"fmt"
	"time"

	mail "github.com/wneessen/go-mail"
)

// sender delivers one message; errors are retried by the caller.
type sender interface {
	send(ctx context.Context, m *outgoing) error
}

// smtpSender sends through the site's relay with go-mail: the STARTTLS
// policy, authentication and timeouts are the library's, set from
// notify.yml.
type smtpSender struct {
	cfg      SMTPConfig
	password string
}

func newSMTPSender(cfg SMTPConfig) (*smtpSender, error) {
	s := &smtpSender{cfg: cfg}
	if cfg.PasswordFile != "" {
		p, err := readSecret(cfg.PasswordFile)
		if err != nil {
			return nil, fmt.Errorf("smtp.password_file: %w", err)
		}
		s.password = p
	}
	if cfg.Username != "" && s.password == "" {
		return nil, fmt.Errorf("smtp.username %q without smtp.password_file", cfg.Username)
	}
	return s, nil
}

func (s *smtpSender) send(ctx context.Context, m *outgoing) error {
	policy := map[string]mail.TLSPolicy{"opportunistic": mail.TLSOpportunistic, "required": mail.TLSMandatory,
		"none": mail.NoTLS}[s.cfg.StartTLS]
	timeout := time.Duration(s.cfg.Timeout)
	opts := []mail.Option{mail.WithPort(s.cfg.Port), mail.WithTLSPolicy(policy), mail.WithTimeout(timeout)}
	if s.cfg.Username != "" {
		opts = append(opts, mail.WithSMTPAuth(mail.SMTPAuthAutoDiscover), mail.WithUsername(s.cfg.Username),
			mail.WithPassword(s.password))
	}
	c, err := mail.NewClient(s.cfg.Host, opts...)
	if err != nil {
		return err
	}
	msg := mail.NewMsg()
	if err := msg.From(s.cfg.From); err != nil {
		return err
	}
	if err := msg.To(m.To...); err != nil {
		return err
	}
	msg.Subject(m.Subject)
	msg.SetDate()
	msg.SetMessageID()
	// Replies and bounces to a notice are noise for the relay's admins.
	msg.SetGenHeader("Auto-Submitted", "auto-generated")
	msg.SetBodyString(mail.TypeTextPlain, m.Text)
	if m.HTML != "" {
		msg.AddAlternativeString(mail.TypeTextHTML, m.HTML)
	}
	// One bound for the whole exchange: a relay that accepts and then
	// stalls cannot hold the receiver.
	ctx, cancel := context.WithTimeout(ctx, 3*timeout)
	defer cancel()
	return c.DialAndSendWithContext(ctx, msg)
}
