// Package tlstest makes TLS certificates for tests with crypto/x509: a CA,
// a server certificate and a client certificate, written as PEM files.
package tlstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
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

// ServerName is the DNS name on the server certificates Certs makes.
const ServerName = "tumbler.test"

// TLSFiles are PEM files made for one test: a CA, a server certificate
// signed by it (for ServerName and 127.0.0.1, usable by a server and by a
// replica or Sentinel connecting out), and a client certificate.
type TLSFiles struct {
	CA, ServerCert, ServerKey, ClientCert, ClientKey string
	// OtherCA is a second CA that signed nothing here: verifying against it
	// must fail.
	OtherCA string
}

// Certs writes a fresh CA, server and client certificates into a
// temporary directory of the test.
func Certs(t testing.TB) TLSFiles {
	t.Helper()
	dir := t.TempDir()
	ca, caKey := newCA(t, "tumbler test CA")
	other, _ := newCA(t, "some other CA")
	f := TLSFiles{
		CA: filepath.Join(dir, "ca.crt"), OtherCA: filepath.Join(dir, "other-ca.crt"),
		ServerCert: filepath.Join(dir, "server.crt"), ServerKey: filepath.Join(dir, "server.key"),
		ClientCert: filepath.Join(dir, "client.crt"), ClientKey: filepath.Join(dir, "client.key"),
	}
	writePEM(t, f.CA, "CERTIFICATE", ca.Raw)
	writePEM(t, f.OtherCA, "CERTIFICATE", other.Raw)
	issue(t, ca, caKey, &x509.Certificate{
		Subject:     pkix.Name{CommonName: ServerName},
		DNSNames:    []string{ServerName},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}, f.ServerCert, f.ServerKey)
	issue(t, ca, caKey, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "tumbler client"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, f.ClientCert, f.ClientKey)
	return f
}

func newCA(t testing.TB, name string) (*x509.Certificate, *ecdsa.PrivateKey) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(t), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

func issue(t testing.TB, ca *x509.Certificate, caKey *ecdsa.PrivateKey, tmpl *x509.Certificate, certFile, keyFile string) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl.SerialNumber = serial(t)
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, certFile, "CERTIFICATE", der)
	writePEM(t, keyFile, "PRIVATE KEY", kb)
}

func serial(t testing.TB) *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func writePEM(t testing.TB, path, typ string, der []byte) {
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
