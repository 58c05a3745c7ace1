package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The generator rewrites only the marked section, and its numbers match
// values computed by hand: the identity on n = 8 rounds has loss
// k n (n+1) / 2 under k epochs (sens = sqrt(k)), so RMSE sqrt(k (n+1) / 2):
// 3.000 for k = 2 (also for 4-min-separation with 2 participations).
func TestGenerate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.md")
	doc := "# head\n\n" + beginMarker + "\nold\n" + endMarker + "\n\ntail\n"
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(context.Background(), []string{"-out", path, "-sizes", "8", "-k", "1,2"}, io.Discard); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	if !strings.HasPrefix(got, "# head\n\n"+beginMarker) || !strings.HasSuffix(got, endMarker+"\n\ntail\n") || strings.Contains(got, "old") {
		t.Fatalf("markers or surrounding text changed:\n%s", got)
	}
	if n := strings.Count(got, "| identity | 2.121 | 3.000 |"); n != 2 {
		t.Errorf("identity rows (sqrt(4.5) = 2.121, 3.000) found %d times, want 2:\n%s", n, got)
	}
	for _, bad := range [][]string{{"-sizes", "6", "-k", "4"}, {"-k", "0"}, {"-sizes", "x"}} {
		if err := run(context.Background(), append([]string{"-out", path}, bad...), io.Discard); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}

// TestHelp: -h prints the usage and the flags and succeeds, rewriting no
// file (it was "participation: flag: help requested", exit status 1, and no usage).
func TestHelp(t *testing.T) {
	var log bytes.Buffer
	if err := run(context.Background(), []string{"-h"}, &log); err != nil {
		t.Fatalf("-h: %v", err)
	}
	for _, want := range []string{"Usage: go run ./docgen/participation", "-out FILE", "-sizes", "-k"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("-h prints no %q:\n%s", want, log.String())
		}
	}
}
