package security

import (
	"crypto/sha256"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const (
	tokenA     = "alpha-7c1e0a9d5f3b4e2a"
	tokenB     = "bravo-0b9f8e7d6c5a4b3c"
	tokenWrong = "alpha-7c1e0a9d5f3b4e2b"
)

// The token file: one token a line, blank lines and comments skipped, and tokens
// from the environment after it; a token is checked in constant time against the
// digests of the accepted ones.
func TestTokenSources(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "good")
	if err := os.WriteFile(f, []byte("# stepcost clients\r\n\n  "+tokenA+"  \r\n# prometheus\n"+tokenB+"\n\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := loadTokens(Auth{TokenFile: f, Tokens: []string{" charlie-1234567890 ", "", "delta-1234567890"}})
	if want := []string{tokenA, tokenB, "charlie-1234567890", "delta-1234567890"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("tokens %q %v, want %q", got, err, want)
	}
	s := &Guard{}
	for _, tok := range []string{tokenA, "x", strings.Repeat("y", 200)} {
		s.digests = append(s.digests, sha256.Sum256([]byte(tok)))
	}
	for tok, want := range map[string]bool{tokenA: true, "x": true, strings.Repeat("y", 200): true, tokenWrong: false, "": false, "X": false} {
		if s.valid(tok) != want {
			t.Errorf("valid(%q) = %v", tok, !want)
		}
	}
}

// A token file saved with a byte-order mark holds the same tokens (the command
// line's --token-file reads it so): the daemon refused to start on its first
// line. The certificate, key and CA files are read up to a bound: a device
// without end (/dev/zero) was read until memory ran out.
func TestFilesMarkedOrEndless(t *testing.T) {
	f := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(f, []byte("\uFEFF"+tokenA+"\r\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := loadTokens(Auth{TokenFile: f}); err != nil || !slices.Equal(got, []string{tokenA}) {
		t.Errorf("a token file with a byte-order mark: %q %v", got, err)
	}
	for flag, cfg := range map[string]TLS{
		"--tls-cert":      {CertFile: "/dev/zero", KeyFile: f},
		"--tls-key":       {CertFile: f, KeyFile: "/dev/zero"},
		"--tls-client-ca": {ClientCAFile: "/dev/zero"},
	} {
		if cfg.ClientCAFile != "" {
			_, err := clientCAs(cfg.ClientCAFile)
			if err == nil || !strings.Contains(err.Error(), flag) || !strings.Contains(err.Error(), "larger than") {
				t.Errorf("%s /dev/zero: %v", flag, err)
			}
			continue
		}
		err := (&certFiles{certFile: cfg.CertFile, keyFile: cfg.KeyFile}).load()
		if err == nil || !strings.Contains(err.Error(), flag) || !strings.Contains(err.Error(), "larger than") {
			t.Errorf("%s /dev/zero: %v", flag, err)
		}
	}
}
