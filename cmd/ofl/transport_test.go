package main

import (
	"context"
	"errors"
	"io"
	"net/netip"
	"strings"
	"testing"

	"github.com/dpmf/dpmf/internal/cli"
	"github.com/dpmf/dpmf/internal/testpki"
	"github.com/dpmf/dpmf/internal/testutil"
)

// Run flags that the protocol's int32 fields cannot carry are usage
// errors of ofl server (and -id of ofl learner), not values that wrap
// around on the way to the learners.
func TestServerFlagsFitTheWire(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"server", "-state", "d", "-insecure", "-rounds", "4294967296"}, "-rounds 4294967296: want at most 2147483647"},
		{[]string{"server", "-state", "d", "-insecure", "-rounds", "2147483648", "-algo", "nonprivate"}, "-rounds 2147483648: want at most 2147483647"},
		{[]string{"server", "-state", "d", "-insecure", "-learners", "2147483648"}, "-learners 2147483648"},
		{[]string{"server", "-state", "d", "-insecure", "-tau", "4294967297"}, "-tau 4294967297"},
		{[]string{"server", "-state", "d", "-insecure", "-dim", "2147483648"}, "-dim 2147483648"},
		{[]string{"learner", "-insecure", "-id", "4294967296", "-seed", "1"}, "-id 4294967296: want at most 2147483647"},
	} {
		r := runOfl(t, c.args...)
		// On a 32-bit platform the flag package refuses each of these
		// first (int holds none of them): the same exit, one line.
		want, is32 := testutil.IntFlagRefusal(c.args)
		if !is32 {
			want = c.want
		}
		if r.code != cli.ExitUsage || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, want) || !is32 && !strings.Contains(r.stderr, "int32") {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and one line containing %q", c.args, r.code, r.stderr, cli.ExitUsage, want)
		}
	}
}

// checkLoopback accepts loopback addresses and names all of whose
// addresses are loopback, and nothing else: not an empty host, 0.0.0.0 or
// :: (every interface), not a name with one address off loopback, not a
// name that does not resolve.
func TestCheckLoopback(t *testing.T) {
	names := map[string][]netip.Addr{
		"localhost": {netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")},
		"mixed":     {netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("192.0.2.7")},
		"mapped":    {netip.MustParseAddr("::ffff:127.0.0.2")},
		"remote":    {netip.MustParseAddr("2001:db8::1")},
		"empty":     {},
	}
	lookup := func(_ context.Context, host string) ([]netip.Addr, error) {
		ips, ok := names[host]
		if !ok {
			return nil, errors.New("no such host")
		}
		return ips, nil
	}
	for addr, ok := range map[string]bool{
		"127.0.0.1:7070": true, "127.3.4.5:1": true, "[::1]:7070": true, "[::ffff:127.0.0.1]:1": true,
		"localhost:7070": true, "mapped:1": true, "unix:///tmp/ofl.sock": true,
		":7070": false, "0.0.0.0:7070": false, "[::]:7070": false, "10.0.0.1:7070": false, "[2001:db8::1]:1": false,
		"mixed:7070": false, "remote:7070": false, "empty:1": false, "nowhere:7070": false, "127.0.0.1": false,
		"dns:///localhost:7070": false,
	} {
		err := checkLoopback(context.Background(), "-listen", addr, lookup)
		if (err == nil) != ok {
			t.Errorf("%s: %v, want loopback %v", addr, err, ok)
		}
	}
}

// -insecure is refused for a server listening, or a learner connecting,
// off loopback unless -insecure-nonloopback says so; that flag needs
// -insecure.
func TestInsecureStaysOnLoopback(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"server", "-state", "d", "-insecure", "-listen", "0.0.0.0:0"}, "0.0.0.0 means every interface"},
		{[]string{"server", "-state", "d", "-insecure", "-listen", ":0"}, "the host is empty"},
		{[]string{"server", "-state", "d", "-insecure", "-listen", "[::]:0"}, ":: means every interface"},
		{[]string{"server", "-state", "d", "-insecure", "-listen", "192.0.2.1:7070"}, "192.0.2.1 is not a loopback address"},
		{[]string{"learner", "-insecure", "-id", "0", "-seed", "1", "-server", "192.0.2.1:7070"}, "-server 192.0.2.1:7070"},
		{[]string{"learner", "-insecure", "-id", "0", "-seed", "1", "-server", "[2001:db8::1]:7070"}, "not a loopback address"},
		{[]string{"server", "-state", "d", "-tls-cert", "c", "-tls-key", "k", "-insecure-nonloopback"}, "-insecure-nonloopback goes with -insecure only"},
	} {
		r := runOfl(t, c.args...)
		if r.code != cli.ExitUsage || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and one line containing %q", c.args, r.code, r.stderr, cli.ExitUsage, c.want)
		}
	}
	// With the explicit flag the server listens on every interface, and
	// says that it is plaintext.
	var errb strings.Builder
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the server stops at once after listening
	run(ctx, []string{"server", "-insecure", "-insecure-nonloopback", "-state", t.TempDir(), "-listen", "0.0.0.0:0", "-algo", "nonprivate", "-rounds", "2"},
		env{stdout: io.Discard, stderr: &errb})
	if !strings.Contains(errb.String(), "msg=plaintext") || !strings.Contains(errb.String(), "msg=serving") {
		t.Errorf("server with -insecure-nonloopback on 0.0.0.0: %q, want it to serve with a plaintext warning", errb.String())
	}
}

// A server given -seed derives its noise key from the seed, which every
// learner knows (it deals the data with its -seed) and which a search of
// run.json's fingerprint can find: whoever has it removes the noise from
// every released model. Such a server says so on stderr, as a warning, each
// time it starts; one whose key comes from crypto/rand does not.
func TestSeededServerWarns(t *testing.T) {
	for _, c := range []struct {
		args []string
		warn bool
	}{
		// The baseline: its factorization (identity) does not stop at the
		// cancelled context that makes the server stop once listening.
		{[]string{"-seed", "3", "-algo", "independent"}, true},
		{[]string{"-algo", "independent"}, false},
		{[]string{"-seed", "3", "-algo", "nonprivate"}, false}, // no noise, no key
	} {
		log, ok := startLog(t, append([]string{"-insecure", "-rounds", "2", "-learners", "2", "-dim", "3"}, c.args...))
		if !ok {
			continue
		}
		got := strings.Contains(log, "level=WARN msg=\"seeded noise key\"")
		if got != c.warn || (got && !strings.Contains(log, "anyone who knows the seed")) {
			t.Errorf("%v: stderr %q; want a warning that the noise key comes from the seed: %v", c.args, log, c.warn)
		}
	}
}

// A secure-aggregation server without -client-ca lets anyone who reaches
// the port claim a free learner index, and such a claimer is a colluder
// that -colluders does not count: the server says so at every start. With
// mutual TLS, or without secure aggregation, it does not.
func TestSecureWithoutClientCAWarns(t *testing.T) {
	dir := t.TempDir()
	ca := testpki.New(t, dir, "ca")
	cert, key := ca.Issue(t, "server", true)
	secure := []string{"-secure-aggregation", "-threshold", "3", "-learners", "4", "-algo", "nonprivate"}
	for _, c := range []struct {
		name string
		args []string
		warn bool
	}{
		{"secure, no TLS", append([]string{"-insecure"}, secure...), true},
		{"secure, TLS without -client-ca", append([]string{"-tls-cert", cert, "-tls-key", key}, secure...), true},
		{"secure, mutual TLS", append([]string{"-tls-cert", cert, "-tls-key", key, "-client-ca", ca.File}, secure...), false},
		{"plain, TLS without -client-ca", []string{"-tls-cert", cert, "-tls-key", key, "-learners", "4", "-algo", "nonprivate"}, false},
	} {
		log, ok := startLog(t, append([]string{"-rounds", "2", "-dim", "3", "-seed", "1"}, c.args...))
		if !ok {
			continue
		}
		got := strings.Contains(log, "level=WARN msg=\"unauthenticated learners\"")
		if got != c.warn || (got && !strings.Contains(log, "counts as a colluder")) {
			t.Errorf("%s: stderr %q; want the warning about unauthenticated learners: %v", c.name, log, c.warn)
		}
	}
}

// startLog starts "ofl server" with args, a fresh -state and a loopback
// -listen, under a context already cancelled, so that it stops at once
// after listening, and returns what it logged; ok is false (with the test
// failed) when it did not get as far as serving.
func startLog(t *testing.T, args []string) (log string, ok bool) {
	t.Helper()
	var errb strings.Builder
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	run(ctx, append([]string{"server", "-state", t.TempDir(), "-listen", "127.0.0.1:0"}, args...), env{stdout: io.Discard, stderr: &errb})
	log = errb.String()
	if !strings.Contains(log, "msg=serving") {
		t.Errorf("ofl server %v: %q, want it to serve", args, log)
		return log, false
	}
	return log, true
}
