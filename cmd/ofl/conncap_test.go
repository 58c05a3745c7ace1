package main

import (
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
)

// TestServerConnectionCap checks -max-connections on a running server: a
// connection past the cap is not served (gRPC's server answers the
// client's HTTP/2 preface with its settings as soon as it takes a
// connection; here no byte arrives) until a served one closes, and then
// it is. Past the cap, what peers hold outside the call limits
// (docs/distributed.md, "Bounded memory") cannot grow.
func TestServerConnectionCap(t *testing.T) {
	bin := buildOfl(t)
	run := []string{"-learners", "3", "-tau", "2", "-rounds", "4", "-dim", "6", "-seed", "11", "-eps", "2"}
	_, addr := startServerArgs(t, bin, append([]string{"server", "-insecure", "-state", t.TempDir(), "-listen", "127.0.0.1:0",
		"-round-timeout", "60s", "-max-connections", "2"}, run...))
	served := func(c net.Conn, within time.Duration) bool {
		t.Helper()
		require.NoError(t, c.SetReadDeadline(time.Now().Add(within)))
		var b [1]byte
		_, err := c.Read(b[:])
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return false
		}
		require.NoError(t, err)
		return true
	}
	// A connection that sends the HTTP/2 client preface and an empty
	// SETTINGS frame, then nothing.
	dial := func() net.Conn {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		_, err = c.Write(append([]byte(http2.ClientPreface), 0, 0, 0, 4, 0, 0, 0, 0, 0))
		require.NoError(t, err)
		return c
	}
	a, b := dial(), dial()
	require.True(t, served(a, 20*time.Second), "first connection not served")
	require.True(t, served(b, 20*time.Second), "second connection not served")
	c := dial()
	require.False(t, served(c, 2*time.Second), "a third connection was served past -max-connections 2")
	a.Close()
	require.True(t, served(c, 20*time.Second), "the third connection was not served once the first closed")
}
