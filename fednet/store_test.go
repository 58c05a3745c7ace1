package fednet

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testPlan is the run description of the state tests.
var testPlan = []byte(`{"test":1}`)

// testOptions are the state options of the state tests.
func testOptions(noise bool) stateOptions {
	return stateOptions{plan: testPlan, x0: []float64{0, 0}, noise: noise}
}

// testModel is the model the state tests release in round r.
func testModel(r int) []float64 { return []float64{float64(r), -float64(r)} }

// newTestState starts a run in dir, releases rounds 1..rounds and closes
// the directory again.
func newTestState(t *testing.T, dir string, noise bool, rounds int) {
	t.Helper()
	st, err := openState(dir, testOptions(noise))
	require.NoError(t, err)
	defer st.lock.Close()
	for r := 1; r <= rounds; r++ {
		require.NoError(t, st.release(Released{Round: r, Updates: 2, X: testModel(r)}))
	}
}

// reopen restarts on dir and closes it again.
func reopen(dir string, noise bool) error {
	st, err := openState(dir, testOptions(noise))
	if err == nil {
		st.lock.Close()
	}
	return err
}

// refusedRestart checks that a restart of the state directory dir (with
// noise) is refused with one line containing every reason, and that the
// refusal changes nothing there (but the lock file, which names its
// holder). name labels the failures.
func refusedRestart(t *testing.T, dir, name string, reason ...string) {
	t.Helper()
	before := snapshot(t, dir)
	err := reopen(dir, true)
	if assert.Error(t, err, name) {
		for _, s := range reason {
			assert.Contains(t, err.Error(), s, name)
		}
		assert.NotContains(t, err.Error(), "\n", name)
	}
	after := snapshot(t, dir)
	delete(before, lockFile)
	delete(after, lockFile)
	assert.Equal(t, before, after, "%s: a refused restart changed the state directory", name)
}

// A run resumes at its last released round with its key, and each file
// names its run and the file before it.
func TestStateResumes(t *testing.T) {
	dir := t.TempDir()
	newTestState(t, dir, true, 3)
	fi, err := os.Stat(filepath.Join(dir, keyFile))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "noise.key mode")

	st, err := openState(dir, testOptions(true))
	require.NoError(t, err)
	defer st.lock.Close()
	assert.True(t, st.resumed)
	assert.Equal(t, 3, st.last.Round)
	assert.Equal(t, testModel(3), st.last.X)
	assert.NotEqual(t, [32]byte{}, st.key)
	raw, err := os.ReadFile(filepath.Join(dir, keyFile))
	require.NoError(t, err)
	assert.True(t, bytes.Equal(raw, st.key[:]), "the key read back is the file's")

	// The chain, checked independently of the store's code: each file's
	// header holds the run's identity and the SHA-256 that ends the file
	// before it, and each file ends with the SHA-256 of the rest.
	var rec map[string]any
	data, err := os.ReadFile(filepath.Join(dir, runFile))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &rec))
	// Round 0's "previous hash" is the plan's digest (state format 3),
	// computed here from its definition.
	digest := wantPlanDigest(t, testPlan)
	prev := digest[:]
	for r := 0; r <= 3; r++ {
		f, err := os.ReadFile(filepath.Join(dir, roundName(r)))
		require.NoError(t, err)
		assert.Equal(t, "DPMFXR02", string(f[:8]))
		assert.Equal(t, rec["run"], st.run.String())
		assert.Equal(t, st.run[:], f[8:24], "round %d: run identity", r)
		assert.Equal(t, prev, f[48:80], "round %d: previous hash", r)
		sum := sha256.Sum256(f[:len(f)-32])
		assert.Equal(t, sum[:], f[len(f)-32:], "round %d: checksum", r)
		prev = f[len(f)-32:]
	}
	rel, err := ReadRound(dir, 2)
	require.NoError(t, err)
	assert.Equal(t, Released{Round: 2, Updates: 2, X: testModel(2)}, rel)
}

// Every fault that could make a restart release a round twice with the
// same noise (or under another plan, or with another key) is refused with
// a reason; none of them changes a file.
func TestStateRefusesFaults(t *testing.T) {
	other := t.TempDir() // another run with the same plan
	newTestState(t, other, true, 3)
	cases := []struct {
		name   string
		fault  func(t *testing.T, dir string)
		reason string
	}{
		{"newest round lost", func(t *testing.T, dir string) { rm(t, dir, roundName(3)) }, "round 3 was released"},
		{"two newest rounds lost", func(t *testing.T, dir string) { rm(t, dir, roundName(3)); rm(t, dir, roundName(2)) }, "rounds 2..3 again"},
		{"run.json lost", func(t *testing.T, dir string) { rm(t, dir, runFile) }, "no run.json"},
		{"high-water mark lost", func(t *testing.T, dir string) { rm(t, dir, markFile) }, "high-water mark"},
		{"noise key lost", func(t *testing.T, dir string) { rm(t, dir, keyFile) }, "noise.key is missing"},
		{"noise key of another run", func(t *testing.T, dir string) { cp(t, other, dir, keyFile) }, "not run"},
		{"noise key readable by others", func(t *testing.T, dir string) {
			require.NoError(t, os.Chmod(filepath.Join(dir, keyFile), 0o644))
		}, "mode 0644"},
		{"round file of another run", func(t *testing.T, dir string) { cp(t, other, dir, roundName(2)) }, "belongs to run"},
		{"newest round of another run", func(t *testing.T, dir string) { cp(t, other, dir, roundName(3)) }, "belongs to run"},
		{"mark of another run", func(t *testing.T, dir string) { cp(t, other, dir, markFile) }, "belongs to run"},
		{"run.json of another run", func(t *testing.T, dir string) { cp(t, other, dir, runFile) }, "copy or a restore"},
		{"gap", func(t *testing.T, dir string) { rm(t, dir, roundName(1)) }, "round 1 is missing"},
		{"symbolic link", func(t *testing.T, dir string) {
			p := filepath.Join(dir, roundName(3))
			require.NoError(t, os.Rename(p, p+".real"))
			require.NoError(t, os.Symlink(p+".real", p))
		}, "symbolic link"},
		{"rounds past the mark of another run", func(t *testing.T, dir string) {
			h, err := store{other}.readHeader(3)
			require.NoError(t, err)
			sum, err := store{dir}.writeRound(h.run, h.sum, Released{Round: 4, X: testModel(4)})
			require.NoError(t, err)
			_, err = store{dir}.writeRound(h.run, sum, Released{Round: 5, X: testModel(5)})
			require.NoError(t, err)
		}, "belongs to run"},
		{"rounds past the mark off the chain", func(t *testing.T, dir string) {
			st := store{dir}
			rec, err := st.readRun()
			require.NoError(t, err)
			h, err := st.readHeader(2)
			require.NoError(t, err)
			sum, err := st.writeRound(rec.id, h.sum, Released{Round: 4, X: testModel(4)})
			require.NoError(t, err)
			_, err = st.writeRound(rec.id, sum, Released{Round: 5, X: testModel(5)})
			require.NoError(t, err)
		}, "hash chain"},
		{"round file replaced", func(t *testing.T, dir string) {
			st := store{dir}
			rec, err := st.readRun()
			require.NoError(t, err)
			h, err := st.readHeader(1)
			require.NoError(t, err)
			_, err = st.writeRound(rec.id, h.sum, Released{Round: 2, Updates: 1, X: testModel(7)})
			require.NoError(t, err)
		}, "hash chain"},
		{"newest round rewritten", func(t *testing.T, dir string) {
			st := store{dir}
			rec, err := st.readRun()
			require.NoError(t, err)
			h, err := st.readHeader(3)
			require.NoError(t, err)
			_, err = st.writeRound(rec.id, h.prev, Released{Round: 3, Updates: 1, X: testModel(7)})
			require.NoError(t, err)
		}, "not the round 3 that was released"},
		{"mark corrupt", func(t *testing.T, dir string) { flip(t, dir, markFile, 30) }, "checksum mismatch"},
		{"newest round corrupt", func(t *testing.T, dir string) { flip(t, dir, roundName(3), roundHead+3) }, "checksum mismatch"},
		{"another plan", func(t *testing.T, dir string) {
			p := filepath.Join(dir, runFile)
			data, err := os.ReadFile(p)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(p, bytes.Replace(data, []byte(`"test": 1`), []byte(`"test": 2`), 1), 0o644))
		}, "describes another run"},
		{"older format", func(t *testing.T, dir string) {
			p := filepath.Join(dir, runFile)
			data, err := os.ReadFile(p)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(p, bytes.Replace(data, []byte(`"format": 3`), []byte(`"format": 1`), 1), 0o644))
		}, "state format 1, want 3 (written by an older dpmf"},
		{"newer format", func(t *testing.T, dir string) {
			p := filepath.Join(dir, runFile)
			data, err := os.ReadFile(p)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(p, bytes.Replace(data, []byte(`"format": 3`), []byte(`"format": 4`), 1), 0o644))
		}, "state format 4, want 3 (written by a newer dpmf"},
		{"newer round file", func(t *testing.T, dir string) {
			p := filepath.Join(dir, roundName(3))
			data, err := os.ReadFile(p)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(p, bytes.Replace(data, []byte(roundMagic), []byte("DPMFXR03"), 1), 0o644))
		}, `round file format "DPMFXR03", want "DPMFXR02" (written by a newer dpmf`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			newTestState(t, dir, true, 3)
			c.fault(t, dir)
			refusedRestart(t, dir, c.name, c.reason)
		})
	}
}

// A copy of the state directory (a backup restored elsewhere, or a second
// copy started beside the first) is refused: it may lag behind the rounds
// already released.
func TestStateRefusesCopy(t *testing.T) {
	dir := t.TempDir()
	newTestState(t, dir, true, 2)
	if _, ok := dirInode(dir); !ok {
		t.Skip("no inode numbers on this platform")
	}
	cp2 := filepath.Join(t.TempDir(), "copy")
	require.NoError(t, os.Mkdir(cp2, 0o755))
	for name := range snapshot(t, dir) {
		cp(t, dir, cp2, name)
	}
	require.NoError(t, os.Chmod(filepath.Join(cp2, keyFile), 0o600))
	err := reopen(cp2, true)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "copy or a restore")
	// A rename keeps the directory: it resumes.
	moved := filepath.Join(t.TempDir(), "moved")
	require.NoError(t, os.Rename(dir, moved))
	assert.NoError(t, reopen(moved, true))
}

// A model written but not yet marked (the server was killed between the
// two writes) was never served: the restart releases it, once.
func TestStateKilledBetweenRoundAndMark(t *testing.T) {
	dir := t.TempDir()
	newTestState(t, dir, true, 2)
	st := store{dir}
	rec, err := st.readRun()
	require.NoError(t, err)
	h, err := st.readHeader(2)
	require.NoError(t, err)
	_, err = st.writeRound(rec.id, h.sum, Released{Round: 3, Updates: 1, X: testModel(3)})
	require.NoError(t, err)
	s, err := openState(dir, testOptions(true))
	require.NoError(t, err)
	assert.Equal(t, 3, s.last.Round)
	s.lock.Close()
	m, err := st.readMark()
	require.NoError(t, err)
	assert.Equal(t, 3, m.round, "the mark follows the round it now releases")
}

// A stale server (frozen between its round file and its mark, thawed
// after a second server took the directory over and released further
// rounds) writes its mark over the second's before its lock check stops
// it: the mark then lags several rounds behind the round files. A restart
// serves the last of them, which was released already (a round file is
// written once), and moves the mark there; it refused before ("only 3 was
// released"), and TestStressSecureFrozenServerOvertaken's restart failed
// whenever the freeze fell there.
func TestStateRewoundMarkResumes(t *testing.T) {
	dir := t.TempDir()
	newTestState(t, dir, true, 5)
	st := store{dir}
	rec, err := st.readRun()
	require.NoError(t, err)
	h, err := st.readHeader(3)
	require.NoError(t, err)
	require.NoError(t, st.writeMark(mark{run: rec.id, round: 3, sum: h.sum}))
	s, err := openState(dir, testOptions(true))
	require.NoError(t, err)
	assert.Equal(t, 5, s.last.Round)
	assert.Equal(t, testModel(5), s.last.X)
	s.lock.Close()
	m, err := st.readMark()
	require.NoError(t, err)
	assert.Equal(t, 5, m.round, "the mark follows the last round file")
}

// Leftovers of a killed server's writes (a complete model that was never
// released, perhaps) are removed at start; a noise key without a run is
// never reused; a key from the caller must be the run's.
func TestStateStartChecks(t *testing.T) {
	dir := t.TempDir()
	newTestState(t, dir, true, 1)
	tmp := filepath.Join(dir, "."+roundName(2)+".tmp-123456")
	require.NoError(t, os.WriteFile(tmp, []byte("unreleased"), 0o644))
	require.NoError(t, reopen(dir, true))
	_, err := os.Stat(tmp)
	assert.True(t, os.IsNotExist(err), "stale temporary file left: %v", err)
	// Also one whose time is later than the clock's (the clock was set
	// back since the crash, or a file server's clock is ahead): under the
	// lock no temporary file is live. Before, it was kept for good.
	require.NoError(t, os.WriteFile(tmp, []byte("unreleased"), 0o644))
	later := time.Now().Add(time.Hour)
	require.NoError(t, os.Chtimes(tmp, later, later))
	require.NoError(t, reopen(dir, true))
	_, err = os.Stat(tmp)
	assert.True(t, os.IsNotExist(err), "temporary file with a later time left: %v", err)
	// Only the server's own files' temporaries: another program's live
	// write in the directory (an ofl learner's -out pointed here) is left
	// to it; each of the server's kinds is removed.
	other := filepath.Join(dir, ".model.npy.tmp-777")
	require.NoError(t, os.WriteFile(other, []byte("someone else's"), 0o644))
	var ours []string
	for _, base := range []string{runFile, keyFile, markFile, roundName(7), secName(3), secOldFile} {
		ours = append(ours, filepath.Join(dir, "."+base+".tmp-4242"))
		require.NoError(t, os.WriteFile(ours[len(ours)-1], nil, 0o600))
	}
	require.NoError(t, reopen(dir, true))
	_, err = os.Stat(other)
	assert.NoError(t, err, "another program's temporary file was removed")
	for _, p := range ours {
		_, err = os.Stat(p)
		assert.True(t, os.IsNotExist(err), "stale temporary file %s left: %v", filepath.Base(p), err)
	}
	require.NoError(t, os.Remove(other))

	fresh := t.TempDir()
	cp(t, dir, fresh, keyFile)
	err = reopen(fresh, true)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "never reused")

	given := t.TempDir()
	k1, k2 := [32]byte{1}, [32]byte{2}
	o := testOptions(true)
	o.key = &k1
	st, err := openState(given, o)
	require.NoError(t, err)
	st.lock.Close()
	_, err = os.Stat(filepath.Join(given, keyFile))
	assert.True(t, os.IsNotExist(err), "a given key is not written to disk")
	o.key = &k2
	_, err = openState(given, o)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not run")
	o.key = &k1
	st, err = openState(given, o)
	require.NoError(t, err)
	assert.Equal(t, k1, st.key)
	st.lock.Close()
	// A run whose key came from the caller cannot continue on a key file.
	err = reopen(given, true)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "restart with the same seed")
	// Nor can a noisy run continue without noise.
	err = reopen(given, false)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "noise cannot change")
}

// One server per state directory: a second is refused with the holder's
// process named, and the lock is free again once the first closes.
func TestStateLock(t *testing.T) {
	dir := t.TempDir()
	st, err := openState(dir, testOptions(false))
	require.NoError(t, err)
	err = reopen(dir, false)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "in use by another server")
	assert.Contains(t, err.Error(), "pid "+strconv.Itoa(os.Getpid()))
	require.NoError(t, st.lock.Close())
	assert.NoError(t, reopen(dir, false))
}

func rm(t *testing.T, dir, name string) {
	t.Helper()
	require.NoError(t, os.Remove(filepath.Join(dir, name)))
}

// cp copies name from one directory to another, keeping its mode.
func cp(t *testing.T, from, to, name string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(from, name))
	require.NoError(t, err)
	fi, err := os.Stat(filepath.Join(from, name))
	require.NoError(t, err)
	p := filepath.Join(to, name)
	os.Remove(p)
	require.NoError(t, os.WriteFile(p, data, fi.Mode().Perm()))
}

// flip flips one bit of byte k of name.
func flip(t *testing.T, dir, name string, k int) {
	t.Helper()
	p := filepath.Join(dir, name)
	data, err := os.ReadFile(p)
	require.NoError(t, err)
	data[k] ^= 1
	require.NoError(t, os.WriteFile(p, data, 0o644))
}

// snapshot returns the contents of the regular files in dir by name.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	m := map[string]string{}
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		if e.Type().IsRegular() {
			data, err := os.ReadFile(p)
			require.NoError(t, err)
			m[e.Name()] = string(data)
		} else {
			target, _ := os.Readlink(p)
			m[e.Name()] = "link to " + target
		}
	}
	return m
}

// A backup put back after the state directory was deleted: the new
// directory at the same path is another directory, even where the file
// system gives it the deleted one's inode number (ext4 and XFS reuse a
// freed inode at once), and resuming it would release rounds 3.. again
// with the same noise. It is refused.
func TestStateRefusesRestoreOverDeletedDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	newTestState(t, dir, true, 2)
	if _, ok := dirInode(dir); !ok {
		t.Skip("no inode numbers on this platform")
	}
	backup := t.TempDir()
	for name := range snapshot(t, dir) {
		cp(t, dir, backup, name)
	}
	st, err := openState(dir, testOptions(true))
	require.NoError(t, err)
	require.NoError(t, st.release(Released{Round: 3, Updates: 2, X: testModel(3)}))
	st.lock.Close()

	ino, _ := dirInode(dir)
	require.NoError(t, os.RemoveAll(dir))
	require.NoError(t, os.Mkdir(dir, 0o755))
	for name := range snapshot(t, backup) {
		cp(t, backup, dir, name)
	}
	if again, _ := dirInode(dir); again == ino {
		t.Logf("the new directory has the deleted one's inode %d", ino)
		if _, ok := dirBirth(dir); !ok {
			t.Skip("the file system reused the inode number and records no creation time: nothing in the directory can tell (docs/distributed.md, Faults)")
		}
	}
	err = reopen(dir, true)
	require.Error(t, err, "a backup restored over a deleted state directory resumed")
	assert.Contains(t, err.Error(), "copy or a restore")
	assert.NotContains(t, err.Error(), "\n")
}

// An earlier round file: truncated, or its header or final hash changed,
// it is refused at start; a bit flipped inside its model is not seen at
// start (only the newest model is read back), but ReadRound, which ofl
// evaluate reads the models with, refuses it. docs/distributed.md states
// both.
func TestStateEarlierRoundCorrupt(t *testing.T) {
	for _, c := range []struct {
		name   string
		fault  func(t *testing.T, dir string)
		reason string // "": the start resumes
	}{
		{"truncated", func(t *testing.T, dir string) {
			require.NoError(t, os.Truncate(filepath.Join(dir, roundName(1)), int64(roundHead+16+24))) // 8 bytes short
		}, "inconsistent header"},
		{"header", func(t *testing.T, dir string) { flip(t, dir, roundName(1), roundHead-1) }, "hash chain"},
		{"final hash", func(t *testing.T, dir string) { flip(t, dir, roundName(1), roundHead+16+5) }, "hash chain"},
		{"model entry", func(t *testing.T, dir string) { flip(t, dir, roundName(1), roundHead+3) }, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			newTestState(t, dir, true, 3)
			c.fault(t, dir)
			err := reopen(dir, true)
			if c.reason != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), c.reason)
				return
			}
			require.NoError(t, err)
			_, err = ReadRound(dir, 1)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "checksum mismatch")
		})
	}
}

// TestStateRefusalsSayWhatToDo: every refusal of a state directory whose
// files are damaged, missing or another run's (each file emptied, cut in
// half, with a bit flipped, replaced by the same file of another run,
// removed, or replaced by a directory) is one line that names the file
// (or the directory) and says what the operator can do. Before, most
// said only what was wrong (`released: checksum mismatch`, `run.json:
// unexpected end of JSON input`). A bit flipped inside an earlier round's
// model resumes (TestStateEarlierRoundCorrupt).
func TestStateRefusalsSayWhatToDo(t *testing.T) {
	dir, other, pristine := t.TempDir(), t.TempDir(), t.TempDir()
	newTestState(t, dir, true, 3)
	newTestState(t, other, true, 3)
	copyDir(t, dir, pristine)
	advice := []string{"fresh state directory", "restart with", "finish the run", "chmod 600", "put back"}
	for _, name := range []string{runFile, keyFile, markFile, roundName(0), roundName(1), roundName(3)} {
		for _, how := range []string{"empty", "half", "flip", "other", "removed", "directory"} {
			copyDir(t, pristine, dir) // in place: the directory keeps its inode
			p := filepath.Join(dir, name)
			data, err := os.ReadFile(p)
			require.NoError(t, err)
			switch how {
			case "empty":
				data = nil
			case "half":
				data = data[:len(data)/2]
			case "flip":
				data[len(data)-1] ^= 1 // the final hash, or run.json's last line
				if name == runFile {
					data = bytes.Replace(data, []byte(`"noise": "file"`), []byte(`"noise": "fild"`), 1)
				}
			case "other":
				data, err = os.ReadFile(filepath.Join(other, name))
				require.NoError(t, err)
			}
			require.NoError(t, os.Remove(p))
			switch how {
			case "removed":
			case "directory":
				require.NoError(t, os.Mkdir(p, 0o700))
			default:
				require.NoError(t, os.WriteFile(p, data, 0o600))
			}
			err = reopen(dir, true)
			if name == runFile && how == "flip" && err == nil {
				t.Fatalf("%s %s: resumed", name, how)
			}
			require.Error(t, err, "%s %s", name, how)
			msg := err.Error()
			assert.NotContains(t, msg, "\n", "%s %s", name, how)
			assert.Contains(t, msg, dir, "%s %s", name, how)
			ok := false
			for _, a := range advice {
				ok = ok || strings.Contains(msg, a)
			}
			assert.True(t, ok, "%s %s: says not what to do: %s", name, how, msg)
		}
	}
}

// A server frozen while it creates a run (between its writes) whose lock
// file an operator removed, so that a second server started a run in the
// directory meanwhile: the first stops at its next write, and the second
// run's files (round 0, mark, noise key, run.json) stay its own, so it
// resumes (frozen before run.json, its key already written, the first
// leaves an interrupted start, which the second refuses). Before, the
// first server's create wrote on without checking its lock and replaced
// them all: the second run's noise key was lost and every restart of it
// refused the directory.
func TestFrozenCreatorLeavesTheOtherRun(t *testing.T) {
	for _, at := range []string{roundName(0), markFile, keyFile, runFile} {
		t.Run(at, func(t *testing.T) {
			dir := t.TempDir()
			var second *state
			var files map[string]string
			o := testOptions(true)
			o.beforeCreateWrite = func(name string) {
				if name != at || second != nil {
					return
				}
				if err := os.Remove(filepath.Join(dir, lockFile)); err != nil {
					t.Fatal(err)
				}
				var err error
				second, err = openState(dir, testOptions(true))
				if at == runFile {
					// The first's key is there: the second refuses it.
					require.ErrorContains(t, err, "noise.key exists but run.json does not")
					second = &state{}
					return
				}
				if err != nil {
					t.Fatalf("the second server: %v", err)
				}
				files = snapshot(t, dir)
			}
			first, err := openState(dir, o)
			if err == nil {
				first.lock.Close()
				t.Fatal("the frozen server created its run after its lock file was replaced")
			}
			if second == nil {
				t.Fatal("the hook did not run")
			}
			assert.Contains(t, err.Error(), "removed or replaced")
			if at == runFile {
				_, err := os.Stat(filepath.Join(dir, runFile))
				assert.ErrorIs(t, err, os.ErrNotExist, "the frozen server wrote run.json after its lock file was replaced")
				return
			}
			assert.Equal(t, files, snapshot(t, dir), "the frozen server changed the second run's files")
			require.NoError(t, second.release(Released{Round: 1, Updates: 2, X: testModel(1)}))
			key := second.key
			require.NoError(t, second.lock.Close())
			again, err := openState(dir, testOptions(true))
			require.NoError(t, err, "the second run resumes")
			defer again.lock.Close()
			assert.Equal(t, 1, again.last.Round)
			assert.Equal(t, key, again.key)
		})
	}
}
