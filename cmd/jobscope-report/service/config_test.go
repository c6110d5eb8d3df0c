// SPDX-License-Identifier: Apache-2.0

package service

import "testing"

// TestShippedConfigLoads: the example the packages install is valid.
func TestShippedConfigLoads(t *testing.T) {
	cfg, err := LoadConfig("../../../contrib/report-service.yml")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Listen != "127.0.0.1:9310" || cfg.MaxConcurrent != 4 {
		t.Fatalf("%+v", cfg)
	}
}

func TestConfigRefusesAuthorizationAsProxyHeader(t *testing.T) {
	c := DefaultConfig()
	c.Proxy = ProxyConfig{Header: "authorization", Trusted: []string{"127.0.0.1"}}
	if err := c.Validate(); err == nil {
		t.Fatal("Authorization accepted as the proxy's user header")
	}
	c.Proxy = ProxyConfig{Trusted: []string{"127.0.0.1"}}
	if err := c.Validate(); err == nil {
		t.Fatal("trusted proxies without a header name")
	}
}
