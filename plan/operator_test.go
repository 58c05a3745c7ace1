package plan

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"strings"
	"testing"

	"github.com/dpmf/dpmf/factorize"
)

// TestOperatorDigestRecorded: Calibrate records the digest of its
// factorization, which reads back bit for bit through Marshal and Parse;
// a malformed digest is refused naming the field. The digest of the
// identity over R = 3 rounds is the SHA-256, computed here by hand, of the
// domain, the kind "form:independent" and the form's one size (R); a
// factorization with neither a structured operator nor factors has none.
func TestOperatorDigestRecorded(t *testing.T) {
	p := &Plan{Algorithm: AlgoCorrelated, Strategy: "identity", Rounds: 3, Learners: 2, Tau: 1, Clip: 1, Target: &Target{Eps: 1, Delta: 1e-5}}
	f, err := p.Build(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var b []byte
	b = append(b, "dpmf operator v1\x00"...)
	b = binary.LittleEndian.AppendUint64(b, uint64(len("form:independent")))
	b = append(b, "form:independent"...)
	for _, v := range []uint64{1, 3, 0} { // one size, R = 3, no coefficients
		b = binary.LittleEndian.AppendUint64(b, v)
	}
	sum := sha256.Sum256(b)
	if want := hex.EncodeToString(sum[:]); p.Privacy.OperatorSHA256 != want {
		t.Errorf("identity R = 3: recorded digest %s, want %s", p.Privacy.OperatorSHA256, want)
	}
	if d, _ := OperatorDigest(f); d != p.Privacy.OperatorSHA256 {
		t.Errorf("OperatorDigest %s, recorded %s", d, p.Privacy.OperatorSHA256)
	}
	data, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	q, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if q.Privacy.OperatorSHA256 != p.Privacy.OperatorSHA256 {
		t.Errorf("read back digest %q, want %q", q.Privacy.OperatorSHA256, p.Privacy.OperatorSHA256)
	}
	bad := strings.Replace(string(data), p.Privacy.OperatorSHA256, strings.ToUpper(p.Privacy.OperatorSHA256), 1)
	if _, err := Parse([]byte(bad)); err == nil || !strings.Contains(err.Error(), "operator_sha256") {
		t.Errorf("an upper-case digest: error %v, want a refusal naming operator_sha256", err)
	}
	// The digest changes with a coefficient's last bit.
	w, _ := factorize.Prefix(4)
	bl, err := factorize.BLTStrategy{}.Factorize(context.Background(), w, factorize.SingleParticipation())
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := OperatorDigest(bl)
	op := bl.Operator.(*factorize.BLTParams)
	op.Weights[0] = math.Nextafter(op.Weights[0], math.Inf(1))
	if d2, _ := OperatorDigest(bl); d2 == d1 {
		t.Error("BLT weights one ulp apart: the same digest")
	}
	if _, err := OperatorDigest(&factorize.Factorization{Strategy: "loss-only", Workload: w}); err == nil {
		t.Error("a factorization without operator or factors has a digest")
	}
}
