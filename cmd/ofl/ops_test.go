package main

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dpmf/dpmf/internal/cli"
	"github.com/dpmf/dpmf/internal/testpki"
	"github.com/dpmf/dpmf/internal/testutil"
)

// requireNetError checks that stderr is one line "ofl CMD: ..." containing
// want, with no Go stack.
func requireNetError(t *testing.T, cmd, stderr, want string) {
	t.Helper()
	if !strings.HasPrefix(stderr, "ofl "+cmd+": ") || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, want) {
		t.Errorf("stderr %q, want one line \"ofl %s: ...%s...\"", stderr, cmd, want)
	}
}

func TestServerTimingFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-join-timeout", "-1s"}, "-join-timeout -1s: want a duration >= 0"},
		{[]string{"-quorum-grace", "0s"}, "-quorum-grace 0s: want a duration > 0"},
		{[]string{"-round-timeout", "-2s"}, "-round-timeout -2s: want a duration > 0"},
		{[]string{"-linger", "-1ms"}, "-linger -1ms: want a duration >= 0"},
	} {
		r := runOfl(t, append([]string{"server", "-insecure", "-state", t.TempDir()}, c.args...)...)
		if r.code != cli.ExitUsage {
			t.Errorf("%v: exit %d, want %d", c.args, r.code, cli.ExitUsage)
		}
		requireNetError(t, "server", r.stderr, c.want)
	}
}

// A learner and a server that disagree on TLS: the learner stops within
// seconds (not after -give-up) with one line that says so, and the server
// logs the failed handshake with the learner's address.
func TestTLSMismatchFlags(t *testing.T) {
	dir := t.TempDir()
	ca := testpki.New(t, dir, "ca")
	cert, key := ca.Issue(t, "server", true)
	runFlags := []string{"-learners", "2", "-tau", "1", "-rounds", "2", "-dim", "3", "-seed", "1"}
	for _, c := range []struct {
		name             string
		server, learner  []string
		learnerSays, log string
	}{
		{"-insecure learner, TLS server", []string{"-tls-cert", cert, "-tls-key", key}, []string{"-insecure"},
			"speaks TLS, this learner connects without TLS; leave out -insecure", "the client does not speak TLS"},
		{"TLS learner, -insecure server", []string{"-insecure"}, []string{"-ca", ca.File},
			"does not speak TLS (it answered the TLS handshake in plaintext), this learner connects with TLS; the server runs with -insecure", "the client speaks TLS, this server does not"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			var srvLog testutil.SyncBuffer
			done := make(chan int, 1)
			args := append([]string{"server", "-state", filepath.Join(t.TempDir(), "state"), "-listen", "127.0.0.1:0"}, c.server...)
			go func() { done <- run(ctx, append(args, runFlags...), env{stdout: io.Discard, stderr: &srvLog}) }()
			defer func() { cancel(); <-done }()
			addr := servingAddr(t, &srvLog, done)
			var lerr testutil.SyncBuffer
			start := time.Now()
			code := run(ctx, append([]string{"learner", "-server", addr, "-id", "0", "-seed", "1"}, c.learner...), env{stdout: io.Discard, stderr: &lerr})
			if d := time.Since(start); d > 20*time.Second {
				t.Errorf("the learner stopped after %v, want within seconds (-give-up is 2 min)", d)
			}
			if code != cli.ExitFailure {
				t.Errorf("learner: exit %d, want %d", code, cli.ExitFailure)
			}
			requireNetError(t, "learner", lerr.String(), "TLS mismatch: the server at "+addr+" ")
			requireNetError(t, "learner", lerr.String(), c.learnerSays)
			for deadline := time.Now().Add(10 * time.Second); !strings.Contains(srvLog.String(), `msg="handshake failed" peer=127.0.0.1:`); time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					break
				}
			}
			if log := srvLog.String(); !strings.Contains(log, `msg="handshake failed" peer=127.0.0.1:`) || !strings.Contains(log, c.log) {
				t.Errorf("server log %q, want a failed handshake from 127.0.0.1 saying %q", log, c.log)
			}
		})
	}
}
