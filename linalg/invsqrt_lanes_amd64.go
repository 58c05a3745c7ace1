//go:build !purego

package linalg

// fwdLanesAVX is [fwdLanesGo] in AVX assembly, without its checks.
//
//go:noescape
func fwdLanesAVX(g2prev, h2 []float64, s, t *[nLanes]float64, p []float64)

// bwdLanesAVX is [bwdLanesGo] in AVX assembly, without its checks.
//
//go:noescape
func bwdLanesAVX(g2, h2next []float64, s, u *[nLanes]float64, uout []float64)

// combineLanesAVX is [combineLanesGo] in AVX assembly, without its checks.
//
//go:noescape
func combineLanesAVX(p, u []float64, w *[nLanes]float64, out []float64)

func init() {
	if haveFMA {
		fwdLanes, bwdLanes, combineLanes = fwdLanesAVX, bwdLanesAVX, combineLanesAVX
	}
}
