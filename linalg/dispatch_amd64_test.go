//go:build !purego

package linalg

import (
	"os"
	"os/exec"
	"reflect"
	"testing"

	"golang.org/x/sys/cpu"
)

// The kernels are the assembly exactly where the CPU (and the OS) offer
// AVX2 and FMA, else the Go loops; GODEBUG=cpu.avx2=off (read by
// golang.org/x/sys/cpu) forces the Go loops on any CPU, which the test
// checks in a child process of the test binary.
func TestKernelDispatch(t *testing.T) {
	want := cpu.X86.HasAVX2 && cpu.X86.HasFMA
	if os.Getenv("DPMF_LINALG_DISPATCH_CHILD") == "1" {
		want = false
		if cpu.X86.HasAVX2 {
			t.Fatal("GODEBUG=cpu.avx2=off did not clear cpu.X86.HasAVX2")
		}
	}
	if haveFMA != want {
		t.Fatalf("haveFMA = %v, want %v", haveFMA, want)
	}
	ptr := func(f any) uintptr { return reflect.ValueOf(f).Pointer() }
	type pair struct {
		name       string
		got, asm   any
		goFallback any
	}
	for _, p := range []pair{
		{"dot", dot, dotAVX2, dotGo},
		{"dualDot", dualDotImpl, dualDotAVX2, dualDotGo},
		{"dualBlocks", dualBlocksImpl, dualBlocksAsm, dualBlocksGo},
		{"dualRows4", dualRows4Impl, dualRows4AVX2, dualRows4Go},
		{"subDot4", subDot4, subDot4AVX2, subDot4Go},
		{"update", update, updateAVX2, updateGo},
		{"update4", update4, update4AVX2, update4Go},
		{"accScale4", accScale4, accScale4AVX2, accScale4Go},
		{"fwdLanes", fwdLanes, fwdLanesAVX, fwdLanesGo},
		{"bwdLanes", bwdLanes, bwdLanesAVX, bwdLanesGo},
		{"combineLanes", combineLanes, combineLanesAVX, combineLanesGo},
		{"decayRow", decayRow, decayRowAVX, decayRowGo},
		{"transformRow", transformRow, transformRowAVX, transformRowGo},
		{"dot32", dot32Impl, nil, dot32Go},
		{"axpyDot32", axpyDot32Impl, nil, axpyDot32Go},
	} {
		isGo := ptr(p.got) == ptr(p.goFallback)
		if want == isGo || (want && p.asm != nil && ptr(p.got) != ptr(p.asm)) {
			t.Errorf("%s: the dispatched kernel is not the %s one", p.name, map[bool]string{true: "assembly", false: "Go"}[want])
		}
	}
	if os.Getenv("DPMF_LINALG_DISPATCH_CHILD") == "1" || !want {
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestKernelDispatch$", "-test.count=1")
	cmd.Env = append(os.Environ(), "DPMF_LINALG_DISPATCH_CHILD=1", "GODEBUG=cpu.avx2=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("with GODEBUG=cpu.avx2=off: %v\n%s", err, out)
	}
}
