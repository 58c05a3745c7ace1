package cache_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"math"
	"os"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/dpmf/dpmf/cache"
	"github.com/dpmf/dpmf/factorize"
)

// fuzzRequest is a factorization whose entry FuzzLoadEntry mutates.
type fuzzRequest struct {
	spec     string
	r        int
	part     factorize.Participation
	lossOnly bool
}

var fuzzRequests = []fuzzRequest{
	{"optimal", 6, factorize.SingleParticipation(), false},
	{"optimal", 6, factorize.SingleParticipation(), true},
	{"banded:bands=2", 6, factorize.MinSeparation(2, 0), false},
	{"tree", 5, factorize.SingleParticipation(), false},
	{"sqrt", 6, factorize.FixedEpochs(2), false},
	{"blt:buffers=2", 6, factorize.SingleParticipation(), false},
	{"bisr:bands=2", 6, factorize.SingleParticipation(), false},
	{"semiseparable", 6, factorize.SingleParticipation(), false},
}

// strategy returns the request's strategy and workload.
func (q fuzzRequest) strategy(t testing.TB) (factorize.Strategy, *factorize.Workload) {
	s, err := factorize.ParseStrategy(q.spec)
	if err == nil && q.lossOnly {
		s, err = factorize.WithLossOnly(s, true)
	}
	if err != nil {
		t.Fatal(err)
	}
	w, err := factorize.Prefix(q.r)
	if err != nil {
		t.Fatal(err)
	}
	return s, w
}

// FuzzLoadEntry writes an entry of a request with arbitrary changes and
// loads it. With reseal the bytes get a valid trailing checksum, as anyone
// who can write the cache directory can give them: then only the entry's
// own checks stand between the bytes and a privacy claim. A load must
// never panic; it returns a one-line *CorruptError or a factorization
// whose metrics are finite, are under the requested participation and,
// where the entry holds B and C, agree with the factors themselves
// (column norms of C, the loss from B, B C = A), computed here independently of the entry.
//
// The input is a change to a valid entry, not a whole file: patch written
// over (or, with insert, into) the entry at off, then cut bytes cut from
// its end. Whole files of a few kilobytes made the fuzzer stall: it
// minimises every input that finds new coverage, and its minimisation of
// a byte slice tries removing every range of it, about n^2/2 candidates
// for n bytes (each here a file written and loaded), so that one
// minimisation of an entry took the whole -fuzzminimizetime (60 s by
// default) and a 60 s run made under a hundred executions. A patch is a few bytes to
// minimise, and the mutated entry keeps its valid framing (magic, version,
// lengths), so most inputs reach the metadata and factor checks. The
// strategies, workloads and keys are made once, and every input of the
// process writes its entry in one directory, over the last one's.
func FuzzLoadEntry(f *testing.F) {
	dir := f.TempDir()
	c := &cache.Cache{Dir: dir, Budget: cache.Unlimited}
	type request struct {
		s     factorize.Strategy
		w     *factorize.Workload
		path  string
		entry []byte // without its checksum
		sum   []byte
	}
	reqs := make([]request, len(fuzzRequests))
	for i, q := range fuzzRequests {
		s, w := q.strategy(f)
		if _, _, err := c.Compute(context.Background(), s, w, q.part, nil); err != nil {
			f.Fatal(err)
		}
		key, err := cache.Key(s, w, q.part)
		if err != nil {
			f.Fatal(err)
		}
		b, err := os.ReadFile(c.Path(key))
		if err != nil {
			f.Fatal(err)
		}
		n := len(b) - sha256.Size
		reqs[i] = request{s, w, c.Path(key), b[:n], b[n:]}
		f.Add(uint8(i), uint16(0), []byte(nil), false, uint16(0), true)
		f.Add(uint8(i), uint16(0), []byte(nil), false, uint16(0), false)
		f.Add(uint8(i), uint16(0), []byte(nil), false, uint16(n/2), false)
		f.Add(uint8(i), uint16(n/2), []byte{'x'}, false, uint16(0), true)
	}
	f.Fuzz(func(t *testing.T, which uint8, off uint16, patch []byte, insert bool, cut uint16, reseal bool) {
		q := fuzzRequests[int(which)%len(fuzzRequests)]
		req := reqs[int(which)%len(reqs)]
		s, w := req.s, req.w
		body := append(bytes.Clone(req.entry), req.sum...)
		if reseal {
			body = bytes.Clone(req.entry)
		}
		at := int(off) % (len(body) + 1)
		if insert {
			body = append(body[:at], append(bytes.Clone(patch), body[at:]...)...)
		} else {
			body = append(body[:at], append(bytes.Clone(patch), body[min(len(body), at+len(patch)):]...)...)
		}
		body = body[:len(body)-int(cut)%(len(body)+1)]
		if reseal {
			sum := sha256.Sum256(body)
			body = append(body, sum[:]...)
		}
		if err := os.WriteFile(req.path, body, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := c.Load(s, w, q.part)
		if err != nil {
			var ce *cache.CorruptError
			if !errors.As(err, &ce) || strings.ContainsAny(err.Error(), "\n\r") {
				t.Fatalf("error %T %q, want a one-line *CorruptError", err, err)
			}
			return
		}
		m := got.Metrics
		if !factorize.FiniteMetrics(m) || !(m.Gamma > 0) || m.Participation != q.part {
			t.Fatalf("loaded metrics %+v for %s under %v", m, q.spec, q.part)
		}
		if got.B == nil || got.C == nil {
			return
		}
		// gamma is the largest column norm of C, and the sensitivity under
		// the participation at least gamma.
		_, cols := got.C.Dims()
		gamma := 0.0
		for j := range cols {
			gamma = math.Max(gamma, mat.Norm(got.C.ColView(j), 2))
		}
		if math.Abs(gamma-m.Gamma) > 1e-9*gamma || m.UnitSensitivity.Value < gamma*(1-1e-9) {
			t.Fatalf("gamma %v, sensitivity %v; the loaded C has gamma %v", m.Gamma, m.UnitSensitivity.Value, gamma)
		}
		fro := mat.Norm(got.B, 2) // Frobenius for a matrix
		if loss := m.UnitSensitivity.Value * m.UnitSensitivity.Value * fro * fro; math.Abs(loss-m.Loss) > 1e-9*loss {
			t.Fatalf("loss %v; the loaded B gives %v", m.Loss, loss)
		}
		var bc mat.Dense
		bc.Mul(got.B, got.C)
		for i := range q.r {
			for j := range q.r {
				want := 0.0
				if j <= i {
					want = 1
				}
				if math.Abs(bc.At(i, j)-want) > 1e-6 {
					t.Fatalf("(B C)[%d][%d] = %v, want %v", i, j, bc.At(i, j), want)
				}
			}
		}
	})
}
