package fednet

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/internal/testpki"
	"github.com/dpmf/dpmf/internal/testutil"
	flv1 "github.com/dpmf/dpmf/proto/dpmf/fl/v1"
)

// A learner and a server that disagree on TLS fail within seconds with
// ErrTLSMismatch, in both directions, instead of retrying for GiveUp; the
// server logs the failed handshake with the peer's address and reason.
func TestTLSMismatch(t *testing.T) {
	r := newRun(t, 2, 2, 1, 3)
	dir := t.TempDir()
	ca := testpki.New(t, dir, "ca")
	srvCert, srvKey := ca.Issue(t, "server", true)
	learnerTLS, err := ClientTLS(ca.File, "", "", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		clientCA  string // "" for TLS, the CA for mutual TLS, "-" for no TLS
		learner   credentials.TransportCredentials
		learnerIs string // what the learner reports
		serverIs  string // what the server logs
	}{
		{"plaintext learner, TLS server", "", insecure.NewCredentials(), "speaks TLS, this learner connects without TLS", "first record does not look like a TLS handshake (the client does not speak TLS)"},
		{"plaintext learner, mutual TLS server", ca.File, insecure.NewCredentials(), "speaks TLS, this learner connects without TLS", "(the client does not speak TLS)"},
		{"TLS learner, plaintext server", "-", learnerTLS, "does not speak TLS (it answered the TLS handshake in plaintext), this learner connects with TLS", "the client speaks TLS, this server does not"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var log testutil.SyncBuffer
			creds := insecure.NewCredentials()
			if c.clientCA != "-" {
				if creds, err = ServerTLS(srvCert, srvKey, c.clientCA); err != nil {
					t.Fatal(err)
				}
			}
			s := serve(t, r.options(t.TempDir(), nil), LogHandshakes(creds, slog.New(slog.NewTextHandler(&log, nil))))
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			start := time.Now()
			_, err := RunLearner(ctx, LearnerOptions{Addr: s.addr, ID: 0, Creds: c.learner, GiveUp: 2 * time.Minute,
				Data: func(rc *flv1.RunConfig) (fedopt.Stream, error) { return r.learnerData(rc, 0) }})
			d := time.Since(start)
			if !errors.Is(err, ErrTLSMismatch) || !strings.Contains(err.Error(), "the server at "+s.addr+" ") || !strings.Contains(err.Error(), c.learnerIs) {
				t.Fatalf("learner: %v, want ErrTLSMismatch saying %q", err, c.learnerIs)
			}
			if d > 20*time.Second {
				t.Errorf("the learner stopped after %v, want within seconds (its give-up time is 2 min)", d)
			}
			if !logWithin(&log, `msg="handshake failed" peer=127.0.0.1:`) || !strings.Contains(log.String(), c.serverIs) {
				t.Errorf("server log %q, want a failed handshake from 127.0.0.1 saying %q", log.String(), c.serverIs)
			}
		})
	}
}

// A flood of bad connections logs at most HandshakeLogLimit lines a
// minute; the next line after the minute counts the others.
func TestHandshakeLogLimit(t *testing.T) {
	var log testutil.SyncBuffer
	l := newHandshakeLog(slog.New(slog.NewTextHandler(&log, nil)))
	peer := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9}
	t0 := time.Now()
	for range 50 {
		l.failed(t0, peer, "bad")
	}
	if n := strings.Count(log.String(), "handshake failed"); n != HandshakeLogLimit {
		t.Fatalf("%d lines for 50 failures, want %d", n, HandshakeLogLimit)
	}
	l.failed(t0.Add(time.Minute), peer, "bad")
	if !strings.Contains(log.String(), "not_logged_before=40\n") {
		t.Errorf("after the minute: %q, want the 40 failures not logged counted", log.String())
	}

	// End to end: 40 plaintext connections to a TLS server.
	r := newRun(t, 2, 2, 1, 3)
	dir := t.TempDir()
	ca := testpki.New(t, dir, "ca")
	cert, key := ca.Issue(t, "server", true)
	creds, err := ServerTLS(cert, key, "")
	if err != nil {
		t.Fatal(err)
	}
	var srvLog testutil.SyncBuffer
	s := serve(t, r.options(t.TempDir(), nil), LogHandshakes(creds, slog.New(slog.NewTextHandler(&srvLog, nil))))
	for range 40 {
		conn, err := net.Dial("tcp", s.addr)
		if err != nil {
			t.Fatal(err)
		}
		conn.Write([]byte("GET / HTTP/1.1\r\n\r\n"))
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		conn.Read(make([]byte, 1)) // until the server closes it
		conn.Close()
	}
	if !logWithin(&srvLog, "handshake failed") {
		t.Fatal("no failed handshake logged")
	}
	time.Sleep(100 * time.Millisecond)
	if n := strings.Count(srvLog.String(), "handshake failed"); n > HandshakeLogLimit {
		t.Errorf("%d lines for 40 failed handshakes, want at most %d", n, HandshakeLogLimit)
	}
}

// Under TLS 1.3 a server with mutual TLS refuses a learner's certificate
// after the learner's handshake; a learner slow enough to write first sees
// only the reset its write provokes (TestMutualTLSFlags, in cmd/ofl, failed
// so under -race at a load of 4: the learner without a certificate retried
// for 30 s). mismatch then asks the server once more, writing nothing, and
// names its alert; for a learner with a valid certificate, and for errors
// that are not a lost connection, it says nothing.
func TestLearnerNamesRefusedCredentials(t *testing.T) {
	dir := t.TempDir()
	ca := testpki.New(t, dir, "ca")
	srvCert, srvKey := ca.Issue(t, "server", true)
	srvCreds, err := ServerTLS(srvCert, srvKey, ca.File)
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer(grpc.Creds(srvCreds))
	go g.Serve(lis)
	defer g.Stop()
	addr := lis.Addr().String()
	learner := func(cert, key string) *learnerCreds {
		c, err := ClientTLS(ca.File, "", cert, key)
		if err != nil {
			t.Fatal(err)
		}
		return &learnerCreds{TransportCredentials: c, plainServer: new(atomic.Bool)}
	}
	reset := status.Error(codes.Unavailable, "connection error: desc = \"transport: failed to write client preface: write tcp 127.0.0.1:1->"+addr+": write: connection reset by peer\"")
	ctx := context.Background()
	err = learner("", "").mismatch(ctx, addr, reset)
	if err == nil || !strings.Contains(err.Error(), "certificate required") || !strings.Contains(err.Error(), "refuses this learner's TLS credentials") {
		t.Errorf("no certificate, connection reset: %v, want the server's alert (certificate required)", err)
	}
	if err := learner("", "").mismatch(ctx, addr, status.Error(codes.Unavailable, "the round is not open")); err != nil {
		t.Errorf("no certificate, another error: %v, want nil (not a lost connection)", err)
	}
	cert, key := ca.Issue(t, LearnerName(0), false)
	if err := learner(cert, key).mismatch(ctx, addr, reset); err != nil {
		t.Errorf("a valid certificate, connection reset: %v, want nil", err)
	}
}
