// Package testpki makes throw-away certificate authorities and certificates
// for tests at test time (ECDSA P-256, valid for an hour), so that no
// private key is committed. It is for tests only.
package testpki

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
	"sync"
	"testing"
	"time"
)

// CA is a test certificate authority whose files live in a directory. Its
// methods may be called from several goroutines at once.
type CA struct {
	// File is the CA certificate's PEM file.
	File   string
	dir    string
	cert   *x509.Certificate
	key    *ecdsa.PrivateKey
	mu     sync.Mutex // guards serial: tests issue from several goroutines
	serial int64
}

// New makes a CA named name with its certificate in dir/name-ca.pem.
func New(t testing.TB, dir, name string) *CA {
	t.Helper()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	key, cert, der := create(t, tmpl, nil, nil)
	ca := &CA{File: filepath.Join(dir, name+"-ca.pem"), dir: dir, cert: cert, key: key, serial: 1}
	writePEM(t, ca.File, "CERTIFICATE", der)
	return ca
}

// Issue makes a certificate for the CommonName cn signed by ca, and its
// key: a server certificate for 127.0.0.1 if server, else a client
// certificate. It returns the PEM files dir/cn.pem and dir/cn-key.pem.
func (ca *CA) Issue(t testing.TB, cn string, server bool) (certFile, keyFile string) {
	t.Helper()
	tmpl := &x509.Certificate{Subject: pkix.Name{CommonName: cn}}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
	} else {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	certFile, keyFile, _ = ca.IssueTemplate(t, cn, tmpl)
	return certFile, keyFile
}

// IssueTemplate makes a certificate from tmpl signed by ca, and its key,
// for certificates Issue does not make (several CommonNames in the
// Subject, subject alternative names). The serial number, validity and key
// usage are filled in; the subject, the extended key usage and the
// alternative names are tmpl's. It returns the PEM files dir/name.pem and
// dir/name-key.pem and the parsed certificate.
func (ca *CA) IssueTemplate(t testing.TB, name string, tmpl *x509.Certificate) (certFile, keyFile string, cert *x509.Certificate) {
	t.Helper()
	ca.mu.Lock()
	ca.serial++
	serial := ca.serial
	ca.mu.Unlock()
	c := *tmpl
	c.SerialNumber = big.NewInt(serial)
	c.NotBefore, c.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
	c.KeyUsage = x509.KeyUsageDigitalSignature
	key, cert, der := create(t, &c, ca.cert, ca.key)
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(ca.dir, name+".pem"), filepath.Join(ca.dir, name+"-key.pem")
	writePEM(t, certFile, "CERTIFICATE", der)
	writePEM(t, keyFile, "EC PRIVATE KEY", kder)
	return certFile, keyFile, cert
}

// create makes a fresh P-256 key and the certificate of tmpl for it,
// signed by parent with parentKey, or self-signed when parent is nil; it
// returns the key, the certificate and its DER encoding.
func create(t testing.TB, tmpl, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*ecdsa.PrivateKey, *x509.Certificate, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return key, cert, der
}

func writePEM(t testing.TB, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
