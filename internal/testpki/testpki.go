// Package testpki makes throw-away certificates for tests: a CA, a server
// certificate for the loopback addresses, a client certificate from the same CA and
// one from an unrelated CA. Everything is generated on each run, so no key material
// lives in the repository.
package testpki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// PKI holds the PEM files (paths under a test's temporary directory) and the same
// material loaded for Go clients.
type PKI struct {
	CA                        string // the CA certificate
	ServerCert, ServerKey     string // 127.0.0.1, ::1 and localhost
	ClientCert, ClientKey     string // signed by CA
	StrangerCert, StrangerKey string // signed by another CA, unknown to the server

	Roots    *x509.CertPool  // just CA
	Client   tls.Certificate // ClientCert with its key
	Stranger tls.Certificate // StrangerCert with its key
}

// New generates a PKI in tb's temporary directory.
func New(tb testing.TB) *PKI {
	tb.Helper()
	dir := tb.TempDir()
	ca, caKey := issue(tb, nil, nil, "stepcost test CA", authority)
	other, otherKey := issue(tb, nil, nil, "some other CA", authority)
	p := &PKI{Roots: x509.NewCertPool()}
	p.Roots.AddCert(ca)

	p.CA = write(tb, dir, "ca.pem", "CERTIFICATE", ca.Raw)
	p.ServerCert, p.ServerKey, _ = pair(tb, dir, "server", ca, caKey, server)
	p.ClientCert, p.ClientKey, p.Client = pair(tb, dir, "client", ca, caKey, client)
	p.StrangerCert, p.StrangerKey, p.Stranger = pair(tb, dir, "stranger", other, otherKey, client)
	return p
}

// ClientTLS is a client configuration trusting the CA, presenting cert if given.
func (p *PKI) ClientTLS(cert *tls.Certificate) *tls.Config {
	c := &tls.Config{RootCAs: p.Roots, MinVersion: tls.VersionTLS12}
	if cert != nil {
		c.Certificates = []tls.Certificate{*cert}
	}
	return c
}

type role int

const (
	authority role = iota
	server
	client
)

func pair(tb testing.TB, dir, name string, ca *x509.Certificate, caKey *ecdsa.PrivateKey, r role) (certFile, keyFile string, c tls.Certificate) {
	tb.Helper()
	cert, key := issue(tb, ca, caKey, name, r)
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		tb.Fatal(err)
	}
	certFile = write(tb, dir, name+".pem", "CERTIFICATE", cert.Raw)
	keyFile = write(tb, dir, name+"-key.pem", "PRIVATE KEY", der)
	c, err = tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		tb.Fatal(err)
	}
	return certFile, keyFile, c
}

// issue makes a certificate signed by parent (self-signed when parent is nil).
func issue(tb testing.TB, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, name string, r role) (*x509.Certificate, *ecdsa.PrivateKey) {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		tb.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
	}
	switch r {
	case authority:
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
		tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign
	case client:
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	case server:
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.DNSNames = []string{"localhost"}
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		tb.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatal(err)
	}
	return cert, key
}

func write(tb testing.TB, dir, name, typ string, der []byte) string {
	tb.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		tb.Fatal(err)
	}
	return path
}
