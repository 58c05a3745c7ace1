package fednet

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/dpmf/dpmf/dataset"
	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/secagg"
)

// State file kinds, as FuzzStateFile numbers them.
const (
	kindRound = iota
	kindMark
	kindRun
	kindSec
	kindLearner
	numKinds
)

// stateFiles holds, by kind, the files a real secure run wrote: its
// round files, high-water mark, run.json, every secure-aggregation
// snapshot it wrote (one after each phase's close) and its learners'
// records. A fuzzer that mutates bytes at random almost never makes a
// valid header, so these seed the targets past the header checks.
var stateFiles struct {
	once  sync.Once
	files [numKinds][][]byte
	err   error
}

// realStateFiles runs a secure run of 3 learners and 2 rounds (once per
// process) and returns its files by kind.
func realStateFiles(f *testing.F) [numKinds][][]byte {
	f.Helper()
	stateFiles.once.Do(func() {
		stateFiles.err = writeRealState(f)
	})
	if stateFiles.err != nil {
		f.Fatal(stateFiles.err)
	}
	return stateFiles.files
}

// writeRealState does realStateFiles' run in f's temporary directories.
func writeRealState(f *testing.F) error {
	ds, err := dataset.Synthetic{Alpha: 0.1, Beta: 0.1, Dim: 4}.Dataset(3, 2, 1, 3)
	if err != nil {
		return err
	}
	w, err := factorize.Prefix(2)
	if err != nil {
		return err
	}
	fact, err := factorize.OptimalStrategy{}.Factorize(context.Background(), w, factorize.Participation{})
	if err != nil {
		return err
	}
	r := &run{n: 3, R: 2, tau: 1, d: 4, data: ds, f: fact, std: 0.2, seed: 5,
		cfg: fedopt.Config{Algorithm: fedopt.Correlated, Eta: 0.05, EtaG: 1, Clip: 1}}
	q, err := secagg.NewQuantizer(r.n, r.tau, r.cfg.Clip)
	if err != nil {
		return err
	}
	r.cfg.Quantizer = &q
	dir, ldir := f.TempDir(), f.TempDir()
	files := &stateFiles.files
	srv, err := NewServer(secureOptions(r, dir, 2))
	if err != nil {
		return err
	}
	srv.hooks.afterClose = func(int, uint32, secagg.Phase) error {
		gs, err := store{dir}.secGens()
		if err != nil || len(gs) == 0 {
			return err
		}
		b, err := os.ReadFile(filepath.Join(dir, secName(gs[len(gs)-1])))
		files[kindSec] = append(files[kindSec], b)
		return err
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	g := grpc.NewServer(append(ServerOptionsGRPC(), grpc.Creds(insecure.NewCredentials()))...)
	defer g.Stop()
	srv.Register(g)
	go g.Serve(lis)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- srv.Run(ctx) }()
	a := lis.Addr().String()
	var wg sync.WaitGroup
	lerr := make([]error, r.n)
	for i := range r.n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, lerr[i] = RunLearner(context.Background(), secLearner(r, a, i, filepath.Join(ldir, hex.EncodeToString([]byte{byte(i)}))))
		}()
	}
	wg.Wait()
	if err := <-errc; err != nil {
		return err
	}
	for _, err := range lerr {
		if err != nil {
			return err
		}
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		kind := -1
		switch name := e.Name(); {
		case strings.HasPrefix(name, "round-"):
			kind = kindRound
		case name == markFile:
			kind = kindMark
		case name == runFile:
			kind = kindRun
		case strings.HasPrefix(name, secPrefix):
			kind = kindSec
		}
		if kind < 0 {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return err
		}
		files[kind] = append(files[kind], b)
	}
	for i := range r.n {
		ld := store{filepath.Join(ldir, hex.EncodeToString([]byte{byte(i)}))}
		gs, err := numbered(ld, learnerPrefix, learnerSuffix, learnerName)
		if err != nil || len(gs) == 0 {
			return fmt.Errorf("learner %d left no record (%v)", i, err)
		}
		b, err := os.ReadFile(ld.path(learnerName(gs[len(gs)-1])))
		if err != nil {
			return err
		}
		files[kindLearner] = append(files[kindLearner], b)
	}
	for k, fs := range files {
		if len(fs) == 0 {
			return fmt.Errorf("the run left no state file of kind %d", k)
		}
	}
	return nil
}

// FuzzStateFile feeds every kind of state file to its reader: round files
// (decodeRound), the high-water mark (readMark), run.json (readRun),
// secure-aggregation snapshots (decodeSec, then RestoreAggregator on the
// aggregator it holds) and learner records (decodeLearnerRecord). The
// properties: no panic, every error is one line, and a checksummed file
// that is accepted is canonical (what it decodes to encodes back to the
// very bytes read), and so is the aggregator in an accepted snapshot.
//
// An input is a change to one of the files of a real secure run (file
// which of its kind): patch written over (or, with insert, into) the
// file at off, then cut bytes cut from its end; the checksummed kinds are
// sealed again after the change, as a buggy or hostile writer would. So
// mutations start past the magic and the lengths, which random bytes
// almost never get right. A change, not the whole file, is fuzzed: the
// fuzzer minimises every input that finds new coverage by trying to
// remove every range of its byte slices, O(n^2) runs, and on whole
// snapshots of a few kilobytes that took the whole -fuzzminimizetime
// (60 s by default), so that a 60 s run made a few thousand executions
// in its first seconds and none after.
func FuzzStateFile(f *testing.F) {
	files := realStateFiles(f)
	for kind, fs := range files {
		for i, b := range fs {
			if !checkStateFile(f, f.TempDir(), uint8(kind), stateBody(uint8(kind), b)) {
				f.Fatalf("the run's file %d of kind %d is refused: the seeds would not get past the header", i, kind)
			}
			f.Add(uint8(kind), uint8(i), uint16(0), []byte(nil), false, uint16(0))
			f.Add(uint8(kind), uint8(i), uint16(len(b)/2), []byte{0xff}, false, uint16(0))
		}
	}
	// One directory for the process's inputs, not one each: a directory
	// made and removed per input (and a durable write) cost more than the
	// readers.
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, kind, which uint8, off uint16, patch []byte, insert bool, cut uint16) {
		kind %= numKinds
		fs := files[kind]
		body := stateBody(kind, fs[int(which)%len(fs)])
		at := int(off) % (len(body) + 1)
		rest := body[min(len(body), at+len(patch)):]
		if insert {
			rest = body[at:]
		}
		body = append(append(body[:at:at], patch...), rest...)
		body = body[:len(body)-int(cut)%(len(body)+1)]
		checkStateFile(t, dir, kind, body)
	})
}

// stateBody returns a state file of the kind as checkStateFile takes it:
// without its checksum where it has one.
func stateBody(kind uint8, b []byte) []byte {
	if kind%numKinds == kindRun {
		return bytes.Clone(b)
	}
	return bytes.Clone(b[:len(b)-sha256.Size])
}

// checkStateFile is FuzzStateFile's check of one input, with dir for the
// files that are read from a directory; it reports whether the reader
// accepted the file.
func checkStateFile(t testing.TB, dir string, kind uint8, body []byte) bool {
	var data []byte
	if kind%numKinds != kindRun {
		data = seal(bytes.Clone(body))
	}
	oneLine := func(err error) {
		if strings.ContainsAny(err.Error(), "\n\r") {
			t.Fatalf("kind %d: a multi-line error %q", kind%numKinds, err)
		}
	}
	switch kind % numKinds {
	case kindRound:
		h, x, err := decodeRound(data)
		if err != nil {
			oneLine(err)
			return false
		}
		enc, sum := encodeRound(h.run, h.prev, Released{Round: h.round, Updates: h.updates, X: x})
		if !bytes.Equal(enc, data) || sum != h.sum {
			t.Fatalf("round file %x decoded to %+v %v, which encodes to %x", data, h, x, enc)
		}
	case kindMark:
		s := store{t.TempDir()}
		if err := os.WriteFile(s.path(markFile), data, 0o600); err != nil {
			t.Fatal(err)
		}
		m, err := s.readMark()
		if err != nil {
			oneLine(err)
			return false
		}
		os.Remove(s.path(markFile))
		if err := s.writeMark(m); err != nil {
			t.Fatal(err)
		}
		if enc, err := os.ReadFile(s.path(markFile)); err != nil || !bytes.Equal(enc, data) {
			t.Fatalf("mark %x read as %+v, which is written as %x (%v)", data, m, enc, err)
		}
	case kindRun:
		s := store{t.TempDir()}
		if err := os.WriteFile(s.path(runFile), body, 0o600); err != nil {
			t.Fatal(err)
		}
		rec, err := s.readRun()
		if err != nil {
			oneLine(err)
			return false
		}
		if rec.Format != stateFormat && rec.Format != legacyFormat || !strings.EqualFold(rec.Run, hex.EncodeToString(rec.id[:])) {
			t.Fatalf("run.json %q read as format %d, run %q (identity %x)", body, rec.Format, rec.Run, rec.id)
		}
	case kindSec:
		snap, err := decodeSec(data)
		if err != nil {
			oneLine(err)
			return false
		}
		b := append([]byte(secMagic), snap.run[:]...)
		b = binary.LittleEndian.AppendUint64(b, uint64(snap.round))
		b = binary.LittleEndian.AppendUint32(b, snap.attempt)
		b = binary.LittleEndian.AppendUint32(b, uint32(snap.phase))
		b = binary.LittleEndian.AppendUint64(b, snap.gen)
		if enc := seal(append(b, snap.agg...)); !bytes.Equal(enc, data) {
			t.Fatalf("snapshot %x decoded to %+v, which encodes to %x", data, snap, enc)
		}
		if snap.phase == secagg.PhaseFailed || len(snap.agg) == 0 {
			return true
		}
		agg, err := secagg.RestoreAggregator(snap.agg)
		if err != nil {
			oneLine(err)
			return false
		}
		if enc, err := agg.MarshalBinary(); err != nil || !bytes.Equal(enc, snap.agg) {
			t.Fatalf("aggregator %x restored, which encodes to %x (%v)", snap.agg, enc, err)
		}
	case kindLearner:
		rec, err := decodeLearnerRecord(data)
		if err != nil {
			oneLine(err)
			return false
		}
		if enc := rec.encode(); !bytes.Equal(enc, data) {
			t.Fatalf("record %x decoded to %+v, which encodes to %x", data, rec, enc)
		}
	}
	return true
}
