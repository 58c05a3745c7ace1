package secagg

import (
	"crypto/ecdh"
	"crypto/ed25519"
	"errors"
	"slices"
	"testing"
)

// TestSplitViewsNeedTwoTAboveNPlusC: within one attempt, a server that
// deviates from the protocol tells some learners that learner v's masked
// input arrived (survivors U3 = every learner) and the others that v
// dropped (U3' = every learner but v), to collect T shares of b_v from the
// first group and T shares of s_v^SK from the second: with both it
// removes every mask from y_v. c colluders sign both sets and hand over
// their own shares. A learner signs one set and answers phase 4 for that
// set only (each is also asked for the other) and only with T valid
// signatures on it, so each side needs T learners of its own,
// 2T <= N + c (the same condition as for two attempts, doc.go); either
// rule alone gives that (with both removed from Client.Unmask this test
// fails, at N = T = 4 and N = T = 5). Brute force over every assignment
// of the honest learners to the two sets, for every N <= 5 (4 with
// -short), N/2 < T <= N and c < T, against that closed form; where the
// split succeeds, y_v is actually unmasked to x_v.
func TestSplitViewsNeedTwoTAboveNPlusC(t *testing.T) {
	const dim, v = 4, 0
	seed := uint64(40)
	maxN := 5
	if testing.Short() {
		maxN = 4 // 5 takes most of the time (27 s under -race)
	}
	for n := 2; n <= maxN; n++ {
		for th := n/2 + 1; th <= n; th++ {
			for c := 0; c < th && c < n; c++ {
				honest := n - c // learners 0..honest-1; v = 0 is honest
				possible := false
				for split := 0; split < 1<<honest; split++ {
					seed++
					if splitView(t, n, th, c, split, seed) {
						possible = true
					}
				}
				if want := 2*th <= n+c; possible != want {
					t.Errorf("N = %d, T = %d, c = %d: a split view unmasks y_%d: %v, want %v (2T <= N + c)", n, th, c, v, possible, want)
				}
			}
		}
	}
}

// splitView runs one attempt of N learners, every one sending its masked
// input, then the split: honest learner u (u < N - c) is shown U3 (all) if
// bit u of split is set, else U3' (all but learner 0); the learners
// N-c..N-1 collude. It reports whether the server collected T shares of
// both of learner 0's secrets, and then checks that they unmask y_0.
func splitView(t *testing.T, n, th, c, split int, seed uint64) bool {
	t.Helper()
	const v = 0
	ctx := testContext(n, th, 4)
	s := newSession(t, ctx, seed)
	s.advertise(t)
	s.share(t)
	s.mask(t)
	all := s.u3
	without := all[1:]
	honest := n - c
	views := [2][]int{without, all} // views[1]: v's input arrived
	ctxEnc := encodeContext(ctx)
	var sigs [2][]Signature
	for u, cl := range s.clients {
		for side, set := range views {
			if u < honest && (split>>u)&1 != side {
				continue
			}
			if !slices.Contains(set, u) {
				continue // a signature of a non-survivor is refused
			}
			var sig Signature
			if u < honest {
				var err error
				if sig, err = cl.Sign(set); errors.Is(err, ErrTooFew) {
					continue // U3' below the threshold: nobody signs it
				}
				must(t, err)
			} else { // a colluder signs both sets
				sig = Signature{From: u, Sig: ed25519.Sign(cl.sigKey, consistencyMessage(ctxEnc, set))}
			}
			sigs[side] = append(sigs[side], sig)
		}
	}
	// The server's haul: x-coordinates and shares of s_v^SK (side 0) and
	// b_v (side 1), the colluders' own first.
	var xs [2][]byte
	var got [2][][]byte
	for u := honest; u < n; u++ {
		for side := range 2 {
			xs[side] = append(xs[side], byte(u+1))
			got[side] = append(got[side], s.clients[u].held[v][side])
		}
	}
	for u := range honest {
		own := (split >> u) & 1
		if own == 0 && u == v {
			// v told it dropped: it signs U3' (refused above as a
			// signature, since v is not in U3') and would reveal its own
			// share of s_v; the server asks it all the same.
			if _, err := s.clients[u].Sign(views[0]); err != nil && !errors.Is(err, ErrTooFew) {
				t.Fatal(err)
			}
		}
		// Its own set, then the other one: a learner that answered for
		// both would hand over both shares.
		for _, side := range []int{own, 1 - own} {
			m, err := s.clients[u].Unmask(views[side], sigs[side])
			if err != nil {
				continue // not the set it signed, or fewer than T valid signatures on it
			}
			list := m.Self
			if side == 0 {
				list = m.Secret
			}
			for _, k := range list {
				if k.Of == v {
					xs[side] = append(xs[side], byte(u+1))
					got[side] = append(got[side], k.Share)
				}
			}
		}
	}
	if len(got[0]) < th || len(got[1]) < th {
		return false
	}
	// Both secrets: remove every mask from y_v.
	sk, err := combine(xs[0][:th], got[0][:th])
	must(t, err)
	b, err := combine(xs[1][:th], got[1][:th])
	must(t, err)
	priv, err := ecdh.X25519().NewPrivateKey(sk)
	must(t, err)
	ms := []mask{{key: selfKey(b, ctxEnc, v), neg: true}}
	for _, u := range all[1:] {
		k, err := maskKey(priv, s.roster[u].SPub, ctxEnc, v, u)
		must(t, err)
		ms = append(ms, mask{key: k, neg: u > v}) // y_v holds +PRG(s_vu) for u > v
	}
	y := slices.Clone(s.ys[v])
	applyMasks(y, ms)
	if !slices.Equal(y, s.in[v]) {
		t.Fatalf("N = %d, T = %d, c = %d, split %b: T shares of both secrets of learner %d did not unmask its input", n, th, c, split, v)
	}
	return true
}
