package fednet

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"testing"
)

// The state files are checksummed, so a fuzzer mutating whole files would
// almost never get past the SHA-256. These targets mutate the part before
// the checksum and seal it again (as a file written by a buggy or hostile
// writer would be), then also try the bytes unsealed. The property: a
// record the decoder accepts is canonical, so encoding what it decoded
// gives back the very bytes read (a record read back and rewritten is
// never silently changed, and no two files decode to one record).

// FuzzDecodeLearnerRecord checks decodeLearnerRecord on learner.state
// files: no panic, and an accepted DPMFLS03 record re-encodes to its bytes;
// an accepted DPMFLS02 or DPMFLS01 record re-encodes (as DPMFLS03) to a
// record that decodes to the same fields.
func FuzzDecodeLearnerRecord(f *testing.F) {
	full := learnerRecord{run: runID{1, 2, 3}, learner: 7, unmasked: true, round: 12, attempt: 3,
		msg: []byte("unmask"), dirIno: 99, dirBirth: -5, witnessed: true, seenRound: 11, seenDigest: []byte("digest"), data: "data"}
	empty := learnerRecord{run: runID{9}, learner: 0}
	for _, rec := range []learnerRecord{full, empty} {
		b := rec.encode()
		f.Add(b[:len(b)-sha256.Size])
	}
	// A DPMFLS01 record: the v2 header up to the message's length, then
	// the message.
	v1 := append([]byte(learnerMagicV1), make([]byte, 16)...)
	v1 = binary.LittleEndian.AppendUint32(v1, 2)
	v1 = append(v1, 1)
	v1 = binary.LittleEndian.AppendUint64(v1, 4)
	v1 = binary.LittleEndian.AppendUint32(v1, 1)
	v1 = binary.LittleEndian.AppendUint32(v1, 3)
	f.Add(append(v1, "abc"...))
	// A DPMFLS02 record: the same header, then the directory and the
	// witness, then the message and the witness's digest.
	v2 := append([]byte(learnerMagicV2), v1[len(learnerMagicV1):]...)
	v2 = binary.LittleEndian.AppendUint64(v2, 8)
	v2 = binary.LittleEndian.AppendUint64(v2, 9)
	v2 = append(v2, 1)
	v2 = binary.LittleEndian.AppendUint64(v2, 5)
	v2 = binary.LittleEndian.AppendUint32(v2, 2)
	f.Add(append(v2, "abcde"...))
	f.Add([]byte(learnerMagic))
	for _, b := range realStateFiles(f)[kindLearner] { // the records of a real run's learners
		f.Add(stateBody(kindLearner, b))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if _, err := decodeLearnerRecord(body); err == nil && len(body) < learnerHeadV1+sha256.Size {
			t.Fatalf("accepted %d bytes, shorter than any record", len(body))
		}
		data := seal(bytes.Clone(body))
		rec, err := decodeLearnerRecord(data)
		if err != nil {
			return
		}
		enc := rec.encode()
		if bytes.HasPrefix(data, []byte(learnerMagic)) {
			if !bytes.Equal(enc, data) {
				t.Fatalf("record %x decoded to %+v, which encodes to %x", data, rec, enc)
			}
			return
		}
		v1 := bytes.HasPrefix(data, []byte(learnerMagicV1))
		if !v1 && !bytes.HasPrefix(data, []byte(learnerMagicV2)) {
			t.Fatalf("accepted a record with magic %q", data[:8])
		}
		if rec.data != "" || v1 && (rec.witnessed || rec.dirIno != 0 || rec.dirBirth != 0 || len(rec.seenDigest) != 0) {
			t.Fatalf("%q record %x decoded to %+v, with fields its format lacks", data[:8], data, rec)
		}
		again, err := decodeLearnerRecord(enc)
		if err != nil {
			t.Fatalf("%q record %x decoded to %+v, whose DPMFLS03 encoding is refused: %v", data[:8], data, rec, err)
		}
		if again.run != rec.run || again.learner != rec.learner || again.unmasked != rec.unmasked ||
			again.round != rec.round || again.attempt != rec.attempt || !bytes.Equal(again.msg, rec.msg) ||
			again.witnessed != rec.witnessed || again.dirIno != rec.dirIno || again.dirBirth != rec.dirBirth ||
			again.seenRound != rec.seenRound || !bytes.Equal(again.seenDigest, rec.seenDigest) || again.data != "" {
			t.Fatalf("%q record %+v rewritten as DPMFLS03 reads back as %+v", data[:8], rec, again)
		}
	})
}

// FuzzDecodeRound checks decodeRound on round files: no panic, and an
// accepted file is the encoding of what it decoded to, byte for byte.
func FuzzDecodeRound(f *testing.F) {
	for _, rel := range []Released{{Round: 0}, {Round: 3, Updates: 2, X: []float64{1, -0.5, 1e300}}} {
		b, _ := encodeRound(runID{4, 5}, [sha256.Size]byte{6}, rel)
		f.Add(b[:len(b)-sha256.Size])
	}
	f.Add([]byte("DPMFXR01"))
	for _, b := range realStateFiles(f)[kindRound] { // the round files of a real run
		f.Add(stateBody(kindRound, b))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		decodeRound(body)
		data := seal(bytes.Clone(body))
		h, x, err := decodeRound(data)
		if err != nil {
			return
		}
		if len(x) != h.dim {
			t.Fatalf("header says dimension %d, model has %d entries", h.dim, len(x))
		}
		enc, sum := encodeRound(h.run, h.prev, Released{Round: h.round, Updates: h.updates, X: x})
		if !bytes.Equal(enc, data) || sum != h.sum {
			t.Fatalf("round file %x decoded to %+v %v, which encodes to %x", data, h, x, enc)
		}
	})
}
