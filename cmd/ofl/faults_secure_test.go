//go:build unix

package main

import (
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// switchProxy forwards each connection it accepts to its current backend;
// switching the backend closes the connections in flight, so that the
// clients reconnect to the new one: an address that moves to another
// machine when an operator replaces a server that stopped answering.
type switchProxy struct {
	lis   net.Listener
	mu    sync.Mutex
	to    string
	conns map[net.Conn]bool
}

// newSwitchProxy starts a proxy on a loopback port that forwards to to.
func newSwitchProxy(t *testing.T, to string) *switchProxy {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &switchProxy{lis: lis, to: to, conns: map[net.Conn]bool{}}
	t.Cleanup(func() {
		lis.Close()
		p.switchTo("")
	})
	go p.serve()
	return p
}

func (p *switchProxy) addr() string { return p.lis.Addr().String() }

func (p *switchProxy) serve() {
	for {
		c, err := p.lis.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		to := p.to
		p.mu.Unlock()
		if to == "" {
			c.Close()
			continue
		}
		s, err := net.Dial("tcp", to)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns[c], p.conns[s] = true, true
		p.mu.Unlock()
		for _, pair := range [][2]net.Conn{{c, s}, {s, c}} {
			go func() {
				io.Copy(pair[0], pair[1])
				pair[0].Close()
				pair[1].Close()
			}()
		}
	}
}

// switchTo makes to the backend of new connections and closes those in
// flight.
func (p *switchProxy) switchTo(to string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.to = to
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

// Attack 1d: a stale secure server. Server A of a secure run
// (-secure-aggregation, learner processes with their own state
// directories, all at one address) is frozen (SIGSTOP) inside a round, its
// lock file removed, and server B started on the directory; the address
// moves to B, which resumes A's attempt and releases rounds. B is frozen
// in turn, A thawed (SIGCONT): A must stop without serving; then B is
// SIGKILLed and learner 2 with it, and B and learner 2 are restarted
// (learner 2 on its state directory, without its keys). The restarted server must resume B's
// attempt, never one A wrote: before each server wrote only its own
// generation's snapshot file, A's snapshot (of a round B had released)
// replaced B's, the restart opened B's round's attempt 0 afresh, learner 2
// advertised new keys in it, and learners 0 and 1, which held that
// attempt's keys, stopped ("ShareKeys asked again with a different
// roster"). Every learner must finish, and the released rounds form the
// run's chain.
func TestStressSecureFrozenServerOvertaken(t *testing.T) {
	if testing.Short() {
		t.Skip("stress test")
	}
	bin := buildOfl(t)
	n := trials(1)
	rng := rand.New(rand.NewPCG(17, 18))
	const R = 150
	run := []string{"-learners", "3", "-tau", "2", "-rounds", strconv.Itoa(R), "-dim", "4", "-seed", "7", "-eps", "2",
		"-secure-aggregation", "-threshold", "2"}
	outcomes := map[string]int{}
	for trial := range n {
		state := filepath.Join(t.TempDir(), "state")
		server := func() (*proc, string) {
			return startServerArgs(t, bin, append([]string{"server", "-insecure", "-state", state, "-listen", "127.0.0.1:0",
				"-linger", "3s", "-round-timeout", "5s", "-quorum-grace", "1s"}, run...))
		}
		a, addrA := server()
		px := newSwitchProxy(t, addrA)
		lstate := []string{t.TempDir(), t.TempDir(), t.TempDir()}
		learner := func(i int) *proc {
			return start(t, bin, []string{"learner", "-insecure", "-server", px.addr(), "-id", strconv.Itoa(i), "-seed", "7",
				"-state", lstate[i], "-give-up", "60s", "-call-timeout", "5s", "-wait-timeout", "5s"}, nil)
		}
		learners := []*proc{learner(0), learner(1), learner(2)}
		if !waitLog(a, "msg=released", 30*time.Second) {
			t.Fatalf("trial %d: server A released nothing: %s", trial, logOf(a))
		}
		time.Sleep(time.Duration(200+rng.IntN(600)) * time.Millisecond)
		a.cmd.Process.Signal(syscall.SIGSTOP)
		if err := os.Remove(filepath.Join(state, "lock")); err != nil {
			t.Fatal(err)
		}
		b, addrB := server()
		px.switchTo(addrB)
		if !waitLog(b, "msg=released", 30*time.Second) {
			t.Fatalf("trial %d: server B released nothing: %s", trial, logOf(b))
		}
		// B freezes in turn (its next phase close would write over
		// whatever A writes), A thaws and stops, and B is killed.
		time.Sleep(time.Duration(rng.IntN(300)) * time.Millisecond)
		b.cmd.Process.Signal(syscall.SIGSTOP)
		a.cmd.Process.Signal(syscall.SIGCONT)
		errA, logA := exited(t, a, 30*time.Second)
		if errA == nil {
			t.Fatalf("trial %d: the thawed server finished: %s", trial, logA)
		}
		outcomes["the thawed server stopped: "+refusalOf(logA)]++
		kill(t, b)
		if strings.Contains(logOf(b), "msg=released round="+strconv.Itoa(R)+" ") {
			t.Fatalf("trial %d: the run ended before server B was killed: make it longer", trial)
		}
		learners[2].cmd.Process.Signal(syscall.SIGKILL)
		<-learners[2].done
		b, addrB = server()
		px.switchTo(addrB)
		learners[2] = learner(2)
		switch log := logOf(b); {
		case strings.Contains(log, "msg=\"resumed the secure round\""):
			outcomes["the restarted server resumed the attempt in progress"]++
		case strings.Contains(log, "msg=\"new attempt\""):
			outcomes["the restarted server opened a new attempt after a failed one"]++
		default:
			// B stopped after its release, before its snapshot of the
			// next round's attempt 0 was in place: nothing of it was
			// served.
			outcomes["the restarted server opened attempt 0 of the round B released last"]++
		}
		// The restarted server may stop for too few learners (learner 2
		// cannot join the attempt in progress): an operator restarts it.
		finished, over := 0, false
		for end := time.Now().Add(240 * time.Second); finished < len(learners); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(end) {
				t.Fatalf("trial %d: the learners did not finish: %s", trial, logOf(b))
			}
			finished += learnersEnded(t, "trial "+strconv.Itoa(trial), learners)
			if over {
				continue
			}
			select {
			case err := <-b.done:
				if err == nil {
					over = true
					continue
				}
				if !strings.Contains(logOf(b), "too few learners") {
					t.Fatalf("trial %d: the restarted server: %v\n%s", trial, err, logOf(b))
				}
				outcomes["the restarted server stopped for too few learners and was restarted"]++
				b, addrB = server()
				px.switchTo(addrB)
			default:
			}
		}
		if !over {
			if err, log := exited(t, b, 30*time.Second); err != nil {
				t.Fatalf("trial %d: the restarted server: %v\n%s", trial, err, log)
			}
		}
		readModels(t, state, R) // every round, once, in the run's hash chain
	}
	for k, v := range outcomes {
		t.Logf("%3d  %s", v, k)
	}
}
