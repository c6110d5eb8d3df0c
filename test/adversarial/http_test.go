// SPDX-License-Identifier: Apache-2.0

package adversarial

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// 200 scrapes at once on a 128-job node: each gets 200 or, past its
// deadline waiting for a slot, 503; nothing else, and the node goes on.
func TestConcurrentScrapes(t *testing.T) {
	_, args := tree(t, 128)
	n := start(t, nil, args...)
	base := rssKiB(t, n.cmd.Process.Pid)
	codes := map[int]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	peak := base
	for range 200 {
		wg.Go(func() {
			status, _, _ := n.scrape(3 * time.Second)
			mu.Lock()
			codes[status]++
			peak = max(peak, rssKiB(t, n.cmd.Process.Pid))
			mu.Unlock()
		})
	}
	wg.Wait()
	time.Sleep(time.Second)
	report(t, "200 concurrent scrapes: %v (status: count); RSS %d KiB before, peak %d KiB, %d KiB after", codes, base, peak, rssKiB(t, n.cmd.Process.Pid))
	if codes[200] == 0 || codes[200]+codes[503] != 200 {
		t.Errorf("statuses %v: want only 200 and 503", codes)
	}
	n.mustScrape(5 * time.Second)
}

// Slowloris: 100 connections trickle a header byte by byte. Normal scrapes
// go on meanwhile, and the server closes the trickling connections at its
// header timeout (10 s).
func TestSlowloris(t *testing.T) {
	_, args := tree(t, 16)
	n := start(t, nil, args...)
	addr := strings.TrimPrefix(n.url, "http://")
	var conns []net.Conn
	for range 100 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "GET /metrics HTTP/1.1\r\nHost: x\r\n")
		conns = append(conns, c)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(500 * time.Millisecond):
			}
			for _, c := range conns {
				_, _ = c.Write([]byte("X"))
			}
		}
	})
	for range 5 {
		if _, took := n.mustScrape(5 * time.Second); took > 2*time.Second {
			t.Errorf("a scrape took %v beside slowloris", took)
		}
		time.Sleep(time.Second)
	}
	close(stop)
	wg.Wait()
	closed := 0
	deadline := time.Now().Add(8 * time.Second)
	for _, c := range conns {
		_ = c.SetReadDeadline(deadline)
		if _, err := io.ReadAll(c); err == nil || !isTimeout(err) {
			closed++ // EOF, a 408, or a reset: the server let it go
		}
	}
	report(t, "slowloris: 100 trickling connections, 5 scrapes served meanwhile, %d of 100 closed by the server", closed)
	if closed != 100 {
		t.Errorf("%d of 100 trickling connections closed by the server", closed)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// A 1 MB header is refused or served, never a 5xx, and a 2 MB one gets 431.
func TestHugeHeader(t *testing.T) {
	_, args := tree(t, 4)
	n := start(t, nil, args...)
	for _, size := range []int{1 << 20, 2 << 20} {
		req, _ := http.NewRequest("GET", n.url+"/metrics", nil)
		req.Header.Set("X-Big", strings.Repeat("a", size))
		resp, err := http.DefaultClient.Do(req)
		status := 0
		if err == nil {
			status = resp.StatusCode
			resp.Body.Close()
		}
		report(t, "%d-byte header: status %d", size, status)
		if status >= 500 || size > 1<<20 && status != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("%d-byte header: status %d (%v)", size, status, err)
		}
	}
	n.mustScrape(5 * time.Second)
}

// selfSigned writes a certificate and key for 127.0.0.1.
func selfSigned(t *testing.T, dir string) (cert, key string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "jobscope"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(k)
	cert, key = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	write(t, cert, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
	write(t, key, string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})))
	return cert, key
}

// Basic auth and TLS through --web.config.file: a wrong password gets 401
// on /metrics and on the landing page, the right one 200, and plain HTTP
// to the TLS port gets no metrics.
func TestAuthAndTLS(t *testing.T) {
	dir := t.TempDir()
	cert, key := selfSigned(t, dir)
	hash, err := bcrypt.GenerateFromPassword([]byte("right"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "web.yml")
	write(t, cfg, fmt.Sprintf("tls_server_config:\n  cert_file: %s\n  key_file: %s\nbasic_auth_users:\n  prom: %s\n", cert, key, hash))
	_, args := tree(t, 4)
	n := start(t, nil, append(args, "--web.config.file="+cfg)...)
	addr := strings.TrimPrefix(n.url, "http://")
	pem, _ := os.ReadFile(cert)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}, Timeout: 10 * time.Second}
	get := func(url, password string) (int, string) {
		req, _ := http.NewRequest("GET", url, nil)
		if password != "" {
			req.SetBasicAuth("prom", password)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", url, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, path := range []string{"/metrics", "/"} {
		for _, pw := range []string{"", "wrong"} {
			if code, body := get("https://"+addr+path, pw); code != http.StatusUnauthorized || strings.Contains(body, "jobscope") {
				t.Errorf("%s with password %q: %d", path, pw, code)
			}
		}
		if code, _ := get("https://"+addr+path, "right"); code != 200 {
			t.Errorf("%s with the right password: %d", path, code)
		}
	}
	resp, err := http.Get("http://" + addr + "/metrics")
	plain := "error: " + fmt.Sprint(err)
	if err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		plain = fmt.Sprintf("status %d", resp.StatusCode)
		if strings.Contains(string(b), "jobscope_") || resp.StatusCode == 200 {
			t.Errorf("plain HTTP to the TLS port got %d with metrics", resp.StatusCode)
		}
	}
	report(t, "TLS + basic auth: 401 without or with a wrong password on /metrics and /, 200 with the right one; plain HTTP: %s", plain)
}
