package fednet

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/asn1"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/dpmf/dpmf/internal/atomicfile"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
)

// LearnerName returns the name a learner's client certificate carries
// (as its CommonName) under mutual TLS: "learner-<i>".
func LearnerName(i int) string { return "learner-" + strconv.Itoa(i) }

// ServerTLS returns the server's TLS credentials from PEM files: its
// certificate chain and key and, for mutual TLS, the CA that signs the
// learners' certificates (clientCA; "" means no client authentication).
// TLS 1.3 only.
func ServerTLS(certFile, keyFile, clientCA string) (credentials.TransportCredentials, error) {
	cert, err := loadKeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("fednet: server certificate: %w", err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13}
	if clientCA != "" {
		pool, err := loadPool(clientCA)
		if err != nil {
			return nil, err
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return credentials.NewTLS(cfg), nil
}

// ClientTLS returns a learner's TLS credentials: the CA that signs the
// server's certificate, the name to verify it for ("" means the host of
// the address), and, for mutual TLS, the learner's certificate and key
// ("" for none).
func ClientTLS(caFile, serverName, certFile, keyFile string) (credentials.TransportCredentials, error) {
	pool, err := loadPool(caFile)
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{RootCAs: pool, ServerName: serverName, MinVersion: tls.VersionTLS13}
	if (certFile == "") != (keyFile == "") {
		return nil, errors.New("fednet: a client certificate needs both the certificate and the key file")
	}
	if certFile != "" {
		cert, err := loadKeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("fednet: learner certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return credentials.NewTLS(cfg), nil
}

// MaxPEMFile is the largest certificate, key or CA file read, in bytes: a
// PEM file is a few kilobytes, and a device such as /dev/zero given by
// mistake must not be read without end.
const MaxPEMFile = 1 << 20

// loadKeyPair reads a PEM certificate chain and its key from regular files
// of at most MaxPEMFile bytes.
func loadKeyPair(certFile, keyFile string) (tls.Certificate, error) {
	certPEM, err := atomicfile.ReadRegular(certFile, MaxPEMFile)
	if err != nil {
		return tls.Certificate{}, err
	}
	keyPEM, err := atomicfile.ReadRegular(keyFile, MaxPEMFile)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.X509KeyPair(certPEM, keyPEM)
}

// loadPool reads PEM certificates into a pool.
func loadPool(file string) (*x509.CertPool, error) {
	data, err := atomicfile.ReadRegular(file, MaxPEMFile)
	if err != nil {
		return nil, fmt.Errorf("fednet: CA certificates: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("fednet: CA certificates: %s holds no PEM certificate", file)
	}
	return pool, nil
}

// IdentifyByCertificate returns the learner index of the peer of ctx from
// its verified client certificate. Use it as ServerOptions.Identify with
// mutual TLS.
//
// The certificate must name exactly one learner, LearnerName(i), and
// nothing else: its Subject carries at most one CommonName attribute (a
// certificate with two, which crypto/x509 would reduce to the last, is
// refused), every DNS subject alternative name equals the CommonName, at
// least one of the two is present, and it has no URI, e-mail or IP
// address alternative names (each would be a second identity). So a
// certificate with CN learner-0 and the DNS name learner-1, or with two
// CommonNames, binds to no learner.
func IdentifyByCertificate(ctx context.Context) (int, error) {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return 0, errors.New("no peer information")
	}
	info, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok || len(info.State.VerifiedChains) == 0 || len(info.State.VerifiedChains[0]) == 0 {
		return 0, errors.New("no verified client certificate")
	}
	return learnerOf(info.State.VerifiedChains[0][0])
}

// oidCommonName is the X.500 attribute type of a CommonName.
var oidCommonName = asn1.ObjectIdentifier{2, 5, 4, 3}

// learnerOf returns the one learner a client certificate names (see
// IdentifyByCertificate).
func learnerOf(c *x509.Certificate) (int, error) {
	var names []string
	for _, a := range c.Subject.Names {
		if !a.Type.Equal(oidCommonName) {
			continue
		}
		v, ok := a.Value.(string)
		if !ok {
			return 0, fmt.Errorf("client certificate with a CommonName that is not a string (%T), want learner-<index>", a.Value)
		}
		names = append(names, v)
	}
	if len(names) > 1 {
		return 0, fmt.Errorf("client certificate with %d CommonNames %q, want exactly one learner-<index>", len(names), names)
	}
	switch {
	case len(c.URIs) > 0:
		return 0, fmt.Errorf("client certificate with URI names %v, want only learner-<index> as CommonName or DNS name", c.URIs)
	case len(c.EmailAddresses) > 0:
		return 0, fmt.Errorf("client certificate with e-mail names %q, want only learner-<index> as CommonName or DNS name", c.EmailAddresses)
	case len(c.IPAddresses) > 0:
		return 0, fmt.Errorf("client certificate with IP address names %v, want only learner-<index> as CommonName or DNS name", c.IPAddresses)
	}
	for _, d := range c.DNSNames {
		if len(names) == 0 {
			names = append(names, d)
		} else if d != names[0] {
			return 0, fmt.Errorf("client certificate for %q with the DNS name %q, want one identity learner-<index>", names[0], d)
		}
	}
	if len(names) == 0 {
		return 0, errors.New("client certificate without a CommonName or DNS name, want learner-<index>")
	}
	name := names[0]
	s, ok := strings.CutPrefix(name, "learner-")
	i, err := strconv.Atoi(s)
	if !ok || err != nil || i < 0 || LearnerName(i) != name {
		return 0, fmt.Errorf("client certificate for %q, want learner-<index>", name)
	}
	return i, nil
}
