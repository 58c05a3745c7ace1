package main

import (
	"strings"
	"testing"
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
		if r.code != exitUsage || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, c.want) || !strings.Contains(r.stderr, "int32") {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and one line containing %q", c.args, r.code, r.stderr, exitUsage, c.want)
		}
	}
}
