// Package guard compares a command's outputs with outputs recorded from an
// earlier commit, for tests that hold a refactoring to the old behaviour
// (see cmd/mfsolve/testdata/guard/gen.sh). It is a guard for moves, beside
// the independent tests, never a substitute for them.
package guard

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
)

// Record is one recorded invocation: the command's arguments and the JSON
// object it printed.
type Record struct {
	Args []string        `json:"args"`
	Out  json.RawMessage `json:"out"`
}

// ReadRecords reads a JSON-lines file of records.
func ReadRecords(path string) ([]Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var recs []Record
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var r Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("%s: %v", path, err)
		}
		recs = append(recs, r)
	}
	return recs, sc.Err()
}

// leaves flattens a JSON value into its leaves keyed by their last object
// key, so that a recorded field is found wherever a new layout nests it.
// A name that occurs more than once keeps its shallowest leaf (the first
// in sorted key order among equally shallow ones): a top-level field is
// never shadowed by a nested one of the same name.
func leaves(v any, name string, depth int, out map[string]any, depths map[string]int) {
	switch x := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			leaves(x[k], k, depth+1, out, depths)
		}
	default:
		if d, ok := depths[name]; name != "" && (!ok || depth < d) {
			out[name], depths[name] = v, depth
		}
	}
}

// Compare checks that every field of the recorded JSON object want, other
// than those in skip, has the same value in got (found by its name at any
// depth): numbers to relative tolerance tol (0: bit for bit), everything
// else exactly. It returns one line per difference.
func Compare(want, got []byte, tol float64, skip ...string) ([]string, error) {
	var w, g any
	dec := json.NewDecoder(bytes.NewReader(want))
	dec.UseNumber()
	if err := dec.Decode(&w); err != nil {
		return nil, fmt.Errorf("recorded output: %v", err)
	}
	dec = json.NewDecoder(bytes.NewReader(got))
	dec.UseNumber()
	if err := dec.Decode(&g); err != nil {
		return nil, fmt.Errorf("output %q: %v", got, err)
	}
	wl, gl := map[string]any{}, map[string]any{}
	leaves(w, "", 0, wl, map[string]int{})
	leaves(g, "", 0, gl, map[string]int{})
	var diffs []string
	for _, k := range slices.Sorted(maps.Keys(wl)) {
		if slices.Contains(skip, k) {
			continue
		}
		wv := wl[k]
		gv, ok := gl[k]
		if !ok {
			diffs = append(diffs, fmt.Sprintf("%s: missing (recorded %v)", k, wv))
			continue
		}
		wn, wIsNum := wv.(json.Number)
		gn, gIsNum := gv.(json.Number)
		if wIsNum && gIsNum {
			a, _ := wn.Float64()
			b, _ := gn.Float64()
			if !Close(a, b, tol) {
				diffs = append(diffs, fmt.Sprintf("%s: %v, recorded %v", k, b, a))
			}
			continue
		}
		if fmt.Sprint(wv) != fmt.Sprint(gv) {
			diffs = append(diffs, fmt.Sprintf("%s: %v, recorded %v", k, gv, wv))
		}
	}
	return diffs, nil
}

// Close reports whether b equals a to relative tolerance tol (bit for bit
// when tol is 0).
func Close(a, b, tol float64) bool {
	if tol == 0 {
		return math.Float64bits(a) == math.Float64bits(b)
	}
	return math.Abs(a-b) <= tol*math.Max(math.Abs(a), math.Abs(b))
}

// ReadNpy reads a little-endian float64 .npy file (version 1 or 2) and
// returns its data in file order. It is deliberately independent of the
// project's codec.
func ReadNpy(path string) ([]float64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(b) < 10 || string(b[1:6]) != "NUMPY" {
		return nil, fmt.Errorf("%s: not a .npy file", path)
	}
	var hdr int
	switch b[6] {
	case 1:
		hdr = 10 + int(binary.LittleEndian.Uint16(b[8:10]))
	default:
		hdr = 12 + int(binary.LittleEndian.Uint32(b[8:12]))
	}
	if !bytes.Contains(b[:hdr], []byte("'<f8'")) || (len(b)-hdr)%8 != 0 {
		return nil, fmt.Errorf("%s: not little-endian float64", path)
	}
	out := make([]float64, (len(b)-hdr)/8)
	for i := range out {
		out[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[hdr+8*i:]))
	}
	return out, nil
}
