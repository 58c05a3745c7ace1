package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/dpmf/dpmf/internal/testutil"
)

// Bad input of every kind (a flag given twice among it: before, the last
// silently won), given with all three outputs named (-o, -C,
// -noise in an empty directory), exits non-zero with one line naming the
// input and creates nothing there: TestUsageErrors and
// TestCalibrationUsageErrors check the messages without outputs, this
// checks that no refusal comes after an output is written.
func TestBadInputWritesNothing(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-R", "-0"}, "-R 0"},
		{[]string{"-R", "1e308"}, `"1e308" for flag -R`},
		{[]string{"-R", "3000000000"}, "needs about"},
		{[]string{"-eps", "-0", "-delta", "1e-5"}, "-eps -0"},
		{[]string{"-eps", "1", "-delta", "-0"}, "-delta -0"},
		{[]string{"-eps", "1", "-delta", "+Inf"}, "-delta +Inf"},
		{[]string{"-eps", "1", "-delta", "1e-5", "-clip", "1e308"}, "-clip 1e+308"},
		{[]string{"-strategy", "banded:bands="}, "-strategy banded:bands="},
		{[]string{"-strategy", "banded:bands=1e3"}, "-strategy banded:bands=1e3"},
		{[]string{"-strategy", "blt:buffers=-1"}, "-strategy blt:buffers=-1"},
		{[]string{"-strategy", "banded:bands=2,"}, "-strategy banded:bands=2,"},
		{[]string{"-strategy", "BANDED"}, "-strategy BANDED"},
		{[]string{"-strategy", "banded:BANDS=2"}, "not BANDS"},
		{[]string{"-participation", "epochs:0"}, `"epochs:0" for flag -participation`},
		{[]string{"-participation", "minsep:"}, `"minsep:" for flag -participation`},
		{[]string{"-participation", "epochs:4,extra"}, `"epochs:4,extra" for flag -participation`},
		{[]string{"-participation", "epochs:3"}, "-participation epochs:3"},
		{[]string{"-workload", "momentum:NaN"}, "-workload momentum:NaN"},
		{[]string{"-dim", "2000000000"}, "for the noise samples"},
		{[]string{"-seed", "-1"}, `"-1" for flag -seed`},
		{[]string{"-eps", "1", "-delta", "1e-5", "-eps", "8"}, `invalid value "8" for flag -eps: given twice (first "1")`},
		{[]string{"-R", "4", "-R", "5"}, `invalid value "5" for flag -R: given twice (first "4")`},
	} {
		dir := t.TempDir()
		args := append([]string{"-o", filepath.Join(dir, "B.npy"), "-C", filepath.Join(dir, "C.npy"),
			"-noise", filepath.Join(dir, "Z.npy"), "-no-cache"}, c.args...)
		if c.args[0] != "-R" {
			args = append(args, "-R", "4")
		}
		if !strings.HasPrefix(c.args[0], "-eps") {
			args = append(args, "-std", "1")
		}
		res := runT(t, args...)
		want := c.want
		if r, ok := testutil.IntFlagRefusal(c.args); ok {
			want = r // -R 3000000000 is no int on a 32-bit platform
		}
		assert.NotEqual(t, 0, res.code, "%v", c.args)
		assert.Empty(t, res.stdout, "%v", c.args)
		requireOneErrorLine(t, res.stderr, want)
		assert.Empty(t, testutil.DirNames(t, dir), "%v left files", c.args)
	}
}
