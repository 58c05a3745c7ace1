package secagg

import (
	"errors"
	"slices"
	"testing"
)

// TestColludersUnmaskTwoAttempts shows why the rule "an honest learner
// answers phase 4 of a round in one attempt only" keeps a server that pools
// its view with c learners from unmasking two attempts of one round only
// when 2T > N + c, not for every c < T (doc.go, docs/distributed.md).
//
// N = 5, T = 3, and learner 4 colludes with the server (c = 1 = 2T - N).
// Attempt 0 fails in phase 4 with the answers of honest learners 0 and 1
// (2 < T). Those two answers and the colluder's own decrypted shares are
// T shares of every b_v of attempt 0: the server unmasks attempt 0's sum.
// Attempt 1 (fresh keys; learner 0 drops before its masked input, learners
// 0 and 1 refuse its phase 4) completes with the answers of 2, 3 and 4.
// The difference of the two sums is learner 0's input, checked against
// the input itself. With c = 2T - N - 1 = 0 the attack fails by counting:
// attempt 0 would need T = 3 honest answers, leaving 2 < T learners that
// may answer attempt 1.
func TestColludersUnmaskTwoAttempts(t *testing.T) {
	const n, th, dim, colluder = 5, 3, 64, 4
	ctx0 := testContext(n, th, dim)
	ctx0.Attempt = 0
	s0 := newSession(t, ctx0, 21)
	s0.advertise(t)
	s0.share(t)
	s0.mask(t)
	s0.sign(t)
	var answers []Unmask // attempt 0's phase 4: honest learners 0 and 1 only
	for _, u := range []int{0, 1} {
		m, err := s0.clients[u].Unmask(s0.u3, s0.sigs)
		must(t, err)
		must(t, s0.agg.Unmasked(m))
		answers = append(answers, m)
	}
	if _, _, err := s0.agg.Finish(); !errors.Is(err, ErrTooFew) {
		t.Fatalf("attempt 0 with 2 of T = 3 unmask answers: err %v, want ErrTooFew", err)
	}

	// The server's pooled view: the masked inputs, the two answers, and the
	// colluder's shares of every self-mask seed.
	sum0 := make([]uint64, dim)
	for _, y := range s0.ys {
		AddRing(sum0, y)
	}
	ctxEnc0 := encodeContext(ctx0)
	var ms []mask
	for _, v := range s0.u3 {
		xs := []byte{byte(answers[0].From + 1), byte(answers[1].From + 1), byte(colluder + 1)}
		ys := [][]byte{answers[0].Self[v].Share, answers[1].Self[v].Share, s0.clients[colluder].held[v][1]}
		b, err := combine(xs, ys)
		must(t, err)
		ms = append(ms, mask{key: selfKey(b, ctxEnc0, v), neg: true})
	}
	applyMasks(sum0, ms)
	if !slices.Equal(sum0, plainSum(s0.in, s0.u3)) {
		t.Fatal("the pooled view did not unmask the failed attempt 0 (the attack this test documents)")
	}

	// Attempt 1: fresh keys, the same inputs; learner 0 drops before its
	// masked input; learners 0 and 1 answered attempt 0's phase 4.
	ctx1 := ctx0
	ctx1.Attempt = 1
	s1 := newSession(t, ctx1, 22)
	s1.in = s0.in
	s1.advertise(t)
	s1.share(t)
	for u := 1; u < n; u++ {
		y, err := s1.clients[u].MaskedInput(s1.agg.Inbox(u), s1.in[u])
		must(t, err)
		must(t, s1.agg.Masked(u, y))
	}
	var err error
	s1.u3, err = s1.agg.CloseMasked()
	must(t, err)
	for _, u := range s1.u3 {
		m, err := s1.clients[u].Sign(s1.u3)
		must(t, err)
		must(t, s1.agg.Signed(m))
	}
	s1.sigs, err = s1.agg.CloseConsistency()
	must(t, err)
	for _, u := range []int{2, 3, colluder} {
		m, err := s1.clients[u].Unmask(s1.u3, s1.sigs)
		must(t, err)
		must(t, s1.agg.Unmasked(m))
	}
	sum1, u3, err := s1.agg.Finish()
	must(t, err)
	if !slices.Equal(u3, []int{1, 2, 3, 4}) {
		t.Fatalf("attempt 1's survivors %v, want [1 2 3 4]", u3)
	}
	SubRing(sum0, sum1)
	if !slices.Equal(sum0, s0.in[0]) {
		t.Fatal("the two sums do not differ by learner 0's input")
	}
}
