//go:build unix

package procusage

import (
	"os"
	"os/exec"
	"testing"
)

// ballast is what the child touches, kept live until it exits.
var ballast []byte

// TestMain lets the test binary serve as the child of TestChild: with
// PROCUSAGE_CHILD set it touches 64 MiB and spins until its own getrusage
// counts 0.2 s of CPU (however loaded the machine), then exits.
func TestMain(m *testing.M) {
	if os.Getenv("PROCUSAGE_CHILD") != "" {
		ballast = make([]byte, 64<<20)
		for i := range ballast {
			ballast[i] = 1
		}
		for SelfCPU() < 0.2 {
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// A child that touched 64 MiB and spun to 0.2 s of CPU reports, from the
// parent's wait (another reading than the child's own), a peak RSS of at
// least 64 MiB and a CPU time of at least 0.2 s; this process's own
// counters are positive.
func TestChild(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "PROCUSAGE_CHILD=1")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	cpu, rss := Child(cmd.ProcessState)
	if rss < 64<<20 || cpu < 0.2 {
		t.Errorf("child: peak RSS %d bytes, CPU %v s; want >= 64 MiB and >= 0.2 s", rss, cpu)
	}
	if SelfRSS() <= 0 || SelfCPU() <= 0 {
		t.Errorf("self: peak RSS %d, CPU %v; want both positive", SelfRSS(), SelfCPU())
	}
}
