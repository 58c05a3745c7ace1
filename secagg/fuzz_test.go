package secagg

import (
	"encoding"
	"slices"
	"testing"
)

// validMessages returns one encoding of each message kind from a real run,
// and a snapshot.
func validMessages(t testing.TB) map[string][]byte {
	out := map[string][]byte{}
	ctx := testContext(3, 2, 5)
	var first [5]bool
	hook := func(e Event) {
		if first[e.Phase] {
			return
		}
		first[e.Phase] = true
		var b []byte
		var err error
		switch m := e.Message.(type) {
		case Advertise:
			b, err = m.MarshalBinary()
		case Shares:
			b, err = m.MarshalBinary()
			if err == nil {
				out["EncryptedShare"], err = m.Boxes[0].MarshalBinary()
			}
		case Signature:
			b, err = m.MarshalBinary()
		case Unmask:
			b, err = m.MarshalBinary()
		default:
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		out[e.Phase.String()] = b
	}
	if _, _, err := Run(ctx, randomInputs(4, 3, 5), nil, testRand(4), hook); err != nil {
		t.Fatal(err)
	}
	a, _ := NewAggregator(ctx)
	snap, _ := a.MarshalBinary()
	out["snapshot"] = snap
	return out
}

// fuzzDecode checks that decoding data never panics and that whatever
// decodes encodes back to the same bytes (one encoding per message).
func fuzzDecode[M any, P interface {
	*M
	encoding.BinaryUnmarshaler
	encoding.BinaryMarshaler
}](f *testing.F, seed string) {
	msgs := validMessages(f)
	good, ok := msgs[seed]
	if !ok {
		f.Fatalf("no valid %s message to seed with", seed)
	}
	f.Add(good)
	for _, cut := range []int{0, 1, 3, 4, 5, len(good) / 2, len(good) - 1} {
		f.Add(good[:cut])
	}
	f.Add(append(slices.Clone(good), 0))
	huge := slices.Clone(good)
	if len(huge) > 7 {
		huge[6], huge[7] = 0xff, 0xff // a count or id field claiming too much
	}
	f.Add(huge)
	for _, other := range msgs {
		f.Add(other)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var m M
		if err := P(&m).UnmarshalBinary(data); err != nil {
			return
		}
		b, err := P(&m).MarshalBinary()
		if err != nil {
			t.Fatalf("decoded message does not encode: %v", err)
		}
		if !slices.Equal(b, data) {
			t.Fatalf("decode/encode changed the bytes")
		}
	})
}

func FuzzAdvertise(f *testing.F)      { fuzzDecode[Advertise](f, "advertise") }
func FuzzShares(f *testing.F)         { fuzzDecode[Shares](f, "share-keys") }
func FuzzEncryptedShare(f *testing.F) { fuzzDecode[EncryptedShare](f, "EncryptedShare") }
func FuzzSignature(f *testing.F)      { fuzzDecode[Signature](f, "consistency") }
func FuzzUnmask(f *testing.F)         { fuzzDecode[Unmask](f, "unmask") }

// snapshotMessage adapts RestoreAggregator to the fuzz helper.
type snapshotMessage struct{ a *Aggregator }

func (s *snapshotMessage) UnmarshalBinary(b []byte) (err error) {
	s.a, err = RestoreAggregator(b)
	return err
}

func (s *snapshotMessage) MarshalBinary() ([]byte, error) { return s.a.MarshalBinary() }

func FuzzRestoreAggregator(f *testing.F) { fuzzDecode[snapshotMessage](f, "snapshot") }

func TestMessageSizes(t *testing.T) {
	_, err := Advertise{From: 1, CPub: make([]byte, 31)}.MarshalBinary()
	refused(t, "Advertise with a short key", err, "Advertise.CPub is 31 bytes, want 32")
	_, err = Signature{From: 300, Sig: make([]byte, 64)}.MarshalBinary()
	refused(t, "Signature with an id out of range", err, "Signature.From is 300")
	var s Shares
	refused(t, "Shares claiming 65535 boxes", s.UnmarshalBinary([]byte{'S', 'A', 1, kindShares, 0, 1, 0xff, 0xff}), "claims 65535 entries")
}
