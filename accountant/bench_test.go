package accountant

import "testing"

func BenchmarkSigma(b *testing.B) {
	for _, m := range Methods() {
		b.Run(m.String(), func(b *testing.B) {
			for b.Loop() {
				if _, err := Sigma(0.5, 1e-6, m); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkDelta(b *testing.B) {
	for _, c := range []struct {
		name    string
		eps, mu float64
	}{{"direct", 1, 0.27}, {"integral", 1, 0.01}, {"tiny", 20, 0.5}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				logDeltaGDP(c.eps, c.mu)
			}
		})
	}
}
