package fednet

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"net"
	"net/url"
	"strings"
	"testing"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"

	"github.com/dpmf/dpmf/internal/testpki"
)

// peerWith returns a context whose peer presents cert as its verified
// client certificate, as gRPC's TLS credentials make it.
func peerWith(cert *x509.Certificate) context.Context {
	info := credentials.TLSInfo{State: tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{cert}}}}
	return peer.NewContext(context.Background(), &peer.Peer{AuthInfo: info})
}

// IdentifyByCertificate binds a certificate to a learner only when it
// names exactly one: two CommonNames (crypto/x509 keeps the last), a DNS
// name that disagrees with the CommonName, or a URI, e-mail or IP name is
// refused; one CommonName, or DNS names alone, that agree are accepted.
func TestIdentifyByCertificateIsUnambiguous(t *testing.T) {
	ca := testpki.New(t, t.TempDir(), "ca")
	cn := asn1.ObjectIdentifier{2, 5, 4, 3}
	client := []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	for k, tc := range []struct {
		name    string
		subject pkix.Name
		dns     []string
		uri     string
		email   string
		ip      string
		want    int    // the learner, or -1
		reason  string // part of the error when want is -1
	}{
		{name: "one CommonName", subject: pkix.Name{CommonName: "learner-3"}, want: 3},
		{name: "CommonName and the same DNS name", subject: pkix.Name{CommonName: "learner-2"}, dns: []string{"learner-2"}, want: 2},
		{name: "DNS name only", dns: []string{"learner-1", "learner-1"}, want: 1},
		{name: "two CommonNames", subject: pkix.Name{
			ExtraNames: []pkix.AttributeTypeAndValue{{Type: cn, Value: "learner-0"}, {Type: cn, Value: "learner-1"}}}, want: -1, reason: "2 CommonNames"},
		{name: "two equal CommonNames", subject: pkix.Name{
			ExtraNames: []pkix.AttributeTypeAndValue{{Type: cn, Value: "learner-0"}, {Type: cn, Value: "learner-0"}}}, want: -1, reason: "2 CommonNames"},
		{name: "CommonName and another DNS name", subject: pkix.Name{CommonName: "learner-0"}, dns: []string{"learner-1"}, want: -1, reason: `DNS name "learner-1"`},
		{name: "two DNS names", dns: []string{"learner-0", "learner-1"}, want: -1, reason: `DNS name "learner-1"`},
		{name: "URI name", subject: pkix.Name{CommonName: "learner-0"}, uri: "spiffe://dpmf/learner-1", want: -1, reason: "URI names"},
		{name: "e-mail name", subject: pkix.Name{CommonName: "learner-0"}, email: "learner-1@example.org", want: -1, reason: "e-mail names"},
		{name: "IP name", subject: pkix.Name{CommonName: "learner-0"}, ip: "10.0.0.1", want: -1, reason: "IP address names"},
		{name: "no name", subject: pkix.Name{Organization: []string{"dpmf"}}, want: -1, reason: "without a CommonName"},
		{name: "not a learner", subject: pkix.Name{CommonName: "server"}, want: -1, reason: `"server"`},
		{name: "leading zero", subject: pkix.Name{CommonName: "learner-01"}, want: -1, reason: `"learner-01"`},
	} {
		tmpl := &x509.Certificate{Subject: tc.subject, ExtKeyUsage: client, DNSNames: tc.dns}
		if tc.uri != "" {
			u, err := url.Parse(tc.uri)
			if err != nil {
				t.Fatal(err)
			}
			tmpl.URIs = []*url.URL{u}
		}
		if tc.email != "" {
			tmpl.EmailAddresses = []string{tc.email}
		}
		if tc.ip != "" {
			tmpl.IPAddresses = []net.IP{net.ParseIP(tc.ip)}
		}
		_, _, cert := ca.IssueTemplate(t, "c"+string(rune('a'+k)), tmpl)
		got, err := IdentifyByCertificate(peerWith(cert))
		switch {
		case tc.want >= 0 && (err != nil || got != tc.want):
			t.Errorf("%s: learner %d, %v; want learner %d", tc.name, got, err, tc.want)
		case tc.want < 0 && err == nil:
			t.Errorf("%s: bound to learner %d, want an error", tc.name, got)
		case tc.want < 0 && !strings.Contains(err.Error(), tc.reason):
			t.Errorf("%s: %v, want an error naming %s", tc.name, err, tc.reason)
		}
	}
	if _, err := IdentifyByCertificate(context.Background()); err == nil {
		t.Error("no peer: want an error")
	}
	if _, err := IdentifyByCertificate(peer.NewContext(context.Background(), &peer.Peer{})); err == nil {
		t.Error("no TLS: want an error")
	}
}
