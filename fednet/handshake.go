package fednet

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
)

// ErrTLSMismatch is returned (wrapped) by [RunLearner] when the learner and
// the server disagree on transport security: a learner without TLS against
// a TLS server, or a TLS learner against a server without TLS. Retrying
// cannot help, so the learner stops at once.
var ErrTLSMismatch = errors.New("fednet: TLS mismatch")

// HandshakeLogLimit is the most failed handshakes [LogHandshakes] logs per
// minute; the others are counted, and their number is logged with the
// next failure after the minute.
const HandshakeLogLimit = 10

// LogHandshakes returns the server credentials creds with their failed
// handshakes logged to log: one WARN line "handshake failed" with the
// peer's address and the reason, at most [HandshakeLogLimit] a minute so
// that a flood of bad connections cannot fill the log. For TLS
// credentials that is every failed TLS handshake (a client without TLS,
// an untrusted or missing client certificate, a client that went away);
// for credentials without transport security (insecure), a client that
// opens with a TLS handshake, which the server then refuses as gRPC does.
// A nil log discards.
func LogHandshakes(creds credentials.TransportCredentials, log *slog.Logger) credentials.TransportCredentials {
	log = cmp.Or(log, slog.New(slog.DiscardHandler))
	return &loggedCreds{TransportCredentials: creds, lim: newHandshakeLog(log)}
}

// loggedCreds are server credentials that log failed handshakes.
type loggedCreds struct {
	credentials.TransportCredentials
	lim *handshakeLog
}

// ServerHandshake implements credentials.TransportCredentials.
func (c *loggedCreds) ServerHandshake(raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	if c.Info().SecurityProtocol == "insecure" {
		// Look at the first byte: 0x16 opens a TLS handshake record, never
		// the HTTP/2 preface ("PRI * ..."). gRPC's deadline on raw bounds
		// the read.
		var b [1]byte
		n, err := raw.Read(b[:])
		if err != nil {
			return nil, nil, err
		}
		raw = &replayConn{Conn: raw, pre: b[:n]}
		if b[0] == 0x16 {
			c.lim.failed(time.Now(), raw.RemoteAddr(), "the client speaks TLS, this server does not (it serves without TLS)")
		}
	}
	conn, info, err := c.TransportCredentials.ServerHandshake(raw)
	if err != nil {
		reason := err.Error()
		if errors.As(err, new(tls.RecordHeaderError)) {
			reason += " (the client does not speak TLS)"
		}
		c.lim.failed(time.Now(), raw.RemoteAddr(), reason)
	}
	return conn, info, err
}

// Clone implements credentials.TransportCredentials; the clone shares the
// log and its limit.
func (c *loggedCreds) Clone() credentials.TransportCredentials {
	return &loggedCreds{TransportCredentials: c.TransportCredentials.Clone(), lim: c.lim}
}

// replayConn is a connection whose first bytes, already read, are read
// again.
type replayConn struct {
	net.Conn
	pre []byte
}

func (c *replayConn) Read(p []byte) (int, error) {
	if len(c.pre) > 0 {
		n := copy(p, c.pre)
		c.pre = c.pre[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// handshakeLog logs failed handshakes: a burst of HandshakeLogLimit
// lines, then HandshakeLogLimit a minute.
type handshakeLog struct{ lim logLimiter }

func newHandshakeLog(log *slog.Logger) *handshakeLog {
	return &handshakeLog{logLimiter{log: log, burst: HandshakeLogLimit, rate: HandshakeLogLimit / 60.0, suppressedKey: "not_logged_before"}}
}

// failed logs a failed handshake at time now, unless the limit is reached.
func (l *handshakeLog) failed(now time.Time, peer net.Addr, reason string) {
	addr := "unknown"
	if peer != nil {
		addr = peer.String()
	}
	l.lim.line(now, slog.LevelWarn, "handshake failed", "peer", addr, "reason", reason)
}

// learnerCreds are a learner's credentials that notice a server without
// TLS answering a TLS handshake.
type learnerCreds struct {
	credentials.TransportCredentials
	plainServer *atomic.Bool // shared by the clones
}

// ClientHandshake implements credentials.TransportCredentials.
func (c *learnerCreds) ClientHandshake(ctx context.Context, authority string, raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	conn, info, err := c.TransportCredentials.ClientHandshake(ctx, authority, raw)
	if err != nil && errors.As(err, new(tls.RecordHeaderError)) {
		// The server answered the ClientHello with something that is
		// not TLS: gRPC's HTTP/2 settings, from a server without TLS.
		c.plainServer.Store(true)
	}
	return conn, info, err
}

// Clone implements credentials.TransportCredentials.
func (c *learnerCreds) Clone() credentials.TransportCredentials {
	return &learnerCreds{TransportCredentials: c.TransportCredentials.Clone(), plainServer: c.plainServer}
}

// mismatch returns an ErrTLSMismatch error if the failure err of a call to
// addr comes from a disagreement on TLS, and nil otherwise.
func (c *learnerCreds) mismatch(ctx context.Context, addr string, err error) error {
	switch c.Info().SecurityProtocol {
	case "tls":
		if c.plainServer.Load() {
			return fmt.Errorf("%w: the server at %s does not speak TLS (it answered the TLS handshake in plaintext), this learner connects with TLS", ErrTLSMismatch, addr)
		}
		// Under TLS 1.3 the server checks the learner's certificate only
		// after the learner has finished its handshake; its alert
		// ("certificate required", "bad certificate") then races with
		// the learner's first write, and a slow learner sees only the
		// reset that the write provokes, as if the server were away.
		// Ask once more without writing, and read the answer.
		// A connection reset or closed under the call:
		if status.Code(err) == codes.Unavailable && containsAny(status.Convert(err).Message(), "connection reset by peer", "broken pipe", "EOF", "connection closed") {
			if alert := refusedCredentials(ctx, c.TransportCredentials, addr); alert != nil {
				return fmt.Errorf("fednet: the server at %s refuses this learner's TLS credentials: %w", addr, alert)
			}
		}
	case "insecure":
		// A TLS server closes a plaintext connection without a word:
		// gRPC reports "error reading server preface: EOF". Ask it for
		// a TLS handshake to tell that from a server going away.
		if status.Code(err) == codes.Unavailable && strings.Contains(status.Convert(err).Message(), "server preface") && speaksTLS(ctx, addr) {
			return fmt.Errorf("%w: the server at %s speaks TLS, this learner connects without TLS", ErrTLSMismatch, addr)
		}
	}
	return nil
}

// containsAny reports whether s contains any of subs.
func containsAny(s string, subs ...string) bool {
	return slices.ContainsFunc(subs, func(sub string) bool { return strings.Contains(s, sub) })
}

// refusedCredentials returns the TLS alert with which the server at addr
// refuses a connection made with creds, or nil: a handshake over a new
// connection, then a read of at most two seconds, with nothing written, so
// that an alert the server sends after the handshake (TLS 1.3 verifies the
// client's certificate there) arrives before any reset.
func refusedCredentials(ctx context.Context, creds credentials.TransportCredentials, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	var d net.Dialer
	raw, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil
	}
	defer raw.Close()
	conn, _, err := creds.Clone().ClientHandshake(ctx, addr, raw)
	if err == nil {
		defer conn.Close()
		if dl, ok := ctx.Deadline(); ok {
			conn.SetReadDeadline(dl)
		}
		_, err = conn.Read(make([]byte, 1))
	}
	if isAlert(err) {
		return err // from the handshake or the read
	}
	return nil
}

// isAlert reports whether err is a TLS alert received from the peer
// (crypto/tls reports one as a *net.OpError with Op "remote error").
func isAlert(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "remote error" || errors.As(err, new(tls.AlertError))
}

// speaksTLS reports whether the server at addr completes (or answers with a
// TLS alert) a TLS handshake, within a few seconds. The handshake only
// probes the protocol: nothing is sent over it, so the server's
// certificate is not verified.
func speaksTLS(ctx context.Context, addr string) bool {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	d := tls.Dialer{Config: &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}} // #nosec G402 -- a probe, no data sent
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err == nil {
		conn.Close()
		return true
	}
	return errors.As(err, new(tls.AlertError))
}
