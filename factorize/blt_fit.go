package factorize

import (
	"context"
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"

	"github.com/dpmf/dpmf/internal/optim"
)

// bltObjective is the loss that [BLT] and [BLTMinSep] minimise over the
// parameters (w, lambda) of [BLTParams], with its gradient where it has one
// in closed form.
//
// Single participation (minSep false): the loss of the factorization that
// [BLT] returns, C = T_c N^{-1} with unit columns (N the column norms of the
// Toeplitz T_c, c = T_d^{-1} e_0) and B = A N T_d, that is ||A N T_d||_F^2
// (the squared sensitivity is 1). For prefix sums it costs O(R k) with its
// gradient (see normPrefix); for other Toeplitz workloads the objective is
// the loss of the unscaled Toeplitz C, ||c||^2 ||A T_d||_F^2 (O(R^2), the
// convolution with the workload's column, with finite-difference
// gradients), and the fit is monotone in the number of buffers in that
// loss (BLT then reports the better of it and the unit-column loss).
//
// Min-separation (minSep true): the loss sens^2 ||A T_d||_F^2 of the
// unscaled Toeplitz C, sens exact where its first column is non-negative
// and non-increasing and a never-lower bound elsewhere (see minSepLoss),
// with a gradient for prefix sums.
type bltObjective struct {
	tw     toeplitzWorkload
	minSep bool
	b, kk  int
	// scratch holds the work arrays of loss, reused across calls (loss
	// is not safe for concurrent use).
	scratch [][]float64
}

// buf returns scratch array number slot with length n, zeroed.
func (o *bltObjective) buf(slot, n int) []float64 {
	b := o.dirty(slot, n)
	clear(b)
	return b
}

// dirty returns scratch array number slot with length n, not zeroed (for
// arrays that are written before they are read).
func (o *bltObjective) dirty(slot, n int) []float64 {
	for len(o.scratch) <= slot {
		o.scratch = append(o.scratch, nil)
	}
	if cap(o.scratch[slot]) < n {
		o.scratch[slot] = make([]float64, n)
	}
	return o.scratch[slot][:n]
}

// r returns the number of rounds.
func (o *bltObjective) r() int { return len(o.tw.a) }

// analytic reports whether loss computes gradients.
func (o *bltObjective) analytic() bool { return o.tw.prefix }

// loss returns the loss at (w, lam) and, if gw and gl are not nil (only
// when o.analytic()), sets them to its gradient with respect to w and lam.
// It returns +Inf where the loss is not finite.
func (o *bltObjective) loss(w, lam, gw, gl []float64) float64 {
	var l float64
	switch {
	case o.minSep:
		l = o.minSepLoss(w, lam, gw, gl)
	case o.tw.prefix:
		l = o.normPrefix(w, lam, gw, gl)
	default:
		p := &BLTParams{Weights: w, Lambdas: lam}
		l = columnNormSq(bltInverse(p, o.r())) * o.tw.frobB(p.Coefficients(o.r()))
	}
	if !(l > 0) || math.IsInf(l, 0) {
		return math.Inf(1)
	}
	return l
}

// bltStates returns c = T_d^{-1} e_0 by the recurrence of [bltInverse] and
// the states s_i before each round (states[r*k+i]), which the adjoint
// needs.
func (o *bltObjective) bltStates(w, lam []float64, n int) (c, states []float64) {
	k := len(w)
	s := make([]float64, k)
	c = o.buf(0, n)
	states = o.dirty(1, n*k)
	for r := 0; r < n; r++ {
		copy(states[r*k:], s)
		z := 0.0
		if r == 0 {
			z = 1
		}
		for i, wi := range w {
			z -= wi * s[i]
		}
		for i, l := range lam {
			s[i] = l*s[i] + z
		}
		c[r] = z
	}
	return c, states
}

// coefficients returns d = Coefficients(n) of (w, lam) in a scratch array.
func (o *bltObjective) coefficients(w, lam []float64, n int) []float64 {
	d := o.buf(9, n)
	if n > 0 {
		d[0] = 1
	}
	for i, wi := range w {
		pow := wi
		for s := 1; s < n && pow != 0; s++ {
			d[s] += pow
			pow = flush(pow * lam[i])
		}
	}
	return d
}

// flush returns x, or 0 if |x| < 1e-290: decaying powers stop before the
// subnormal range, whose arithmetic is many times slower, at a relative
// cost far below rounding.
func flush(x float64) float64 {
	if x < 1e-290 && x > -1e-290 {
		return 0
	}
	return x
}

// bltStatesAdjoint adds to gw and gl the gradient of a function of c =
// bltStates(w, lam, n) whose gradient with respect to c is cbar.
func bltStatesAdjoint(w, lam, states, cbar, gw, gl []float64) {
	k := len(w)
	n := len(cbar)
	sbar := make([]float64, k) // adjoint of s_i after round r
	for r := n - 1; r >= 0; r-- {
		zbar := cbar[r]
		for i := range sbar {
			zbar += sbar[i]
		}
		st := states[r*k : r*k+k]
		for i := range sbar {
			gl[i] += sbar[i] * st[i]
			gw[i] -= zbar * st[i]
			sbar[i] = lam[i]*sbar[i] - w[i]*zbar
		}
	}
}

// coefficientsAdjoint adds to gw and gl the gradient of a function of d =
// Coefficients(n) (d_s = sum_i w_i lam_i^(s-1), s >= 1) whose gradient with
// respect to d is dbar.
func coefficientsAdjoint(w, lam, dbar, gw, gl []float64) {
	for i := range w {
		pw, pm, sw, sl := 1.0, 0.0, 0.0, 0.0 // pw = lam^(s-1), pm = lam^(s-2)
		for s := 1; s < len(dbar); s++ {
			sw += dbar[s] * pw
			sl += dbar[s] * float64(s-1) * pm
			pm = pw
			pw *= lam[i]
			if pm == 0 {
				break
			}
		}
		gw[i] += sw
		gl[i] += w[i] * sl
	}
}

// normPrefix returns ||A N T_d||_F^2 for prefix sums, the loss of C = T_c
// N^{-1} with unit columns, and its gradient if gw is not nil. With rho_l =
// R - l (the entries of A^T A are R - max(l, l')),
//
//	||A N T_d||^2 = sum_{l,l'} rho_max(l,l') n_l n_l' sum_{j <= min(l,l')} d_{l-j} d_{l'-j}
//	              = sum_l rho_l n_l (n_l D_l + 2 sum_i w_i G_i(l)),
//
// D_l = sum_{s <= l} d_s^2, Q_i(l) = sum_{s <= l} lam_i^s d_s and G_i(l) =
// sum_{l' < l} lam_i^(l-1-l') n_l' Q_i(l'), all running sums or first-order
// recurrences because d_s = sum_i w_i lam_i^(s-1) for s >= 1: O(R k). The
// gradient is the adjoint of these recurrences, and of n_j = ||c_{0..R-1-j}||
// and c = T_d^{-1} e_0, also O(R k).
func (o *bltObjective) normPrefix(w, lam, gw, gl []float64) float64 {
	r, k := o.r(), len(w)
	c, states := o.bltStates(w, lam, r)
	nrm := o.buf(2, r)
	cum := 0.0
	for t := 0; t < r; t++ {
		cum += c[t] * c[t]
		nrm[r-1-t] = math.Sqrt(cum)
	}
	if math.IsInf(cum, 0) || math.IsNaN(cum) {
		return math.Inf(1)
	}
	d := o.coefficients(w, lam, r)
	dd := o.buf(3, r) // D_l
	q := o.dirty(4, r*k)
	g := o.dirty(5, r*k)
	work := o.buf(10, 8*k)
	w, lam = w[:k], lam[:k]
	qi, gi, pw := work[:k], work[k:2*k], work[2*k:3*k] // Q_i(l), G_i(l), lam_i^l
	for i := range pw {
		pw[i] = 1
	}
	sum, loss := 0.0, 0.0
	for l := 0; l < r; l++ {
		dl, nl := d[l], nrm[l]
		sum += dl * dl
		dd[l] = sum
		ql, gl := q[l*k:l*k+k], g[l*k:l*k+k]
		wg := 0.0
		for i := range ql {
			qv := qi[i] + pw[i]*dl
			qi[i] = qv
			pw[i] = flush(pw[i] * lam[i])
			ql[i] = qv
			gv := gi[i]
			gl[i] = gv
			wg += w[i] * gv
			gi[i] = lam[i]*gv + nl*qv
		}
		loss += float64(r-l) * nl * (nl*sum + 2*wg)
	}
	if gw == nil {
		return loss
	}
	gw, gl = gw[:k], gl[:k]
	clear(gw)
	clear(gl)
	nbar := o.buf(6, r)
	dbar := o.buf(7, r)
	ghat, qhat := work[3*k:4*k], work[4*k:5*k] // adjoint of G_i(l+1); suffix sum of Q_i(l)'s adjoints
	clear(ghat)
	clear(qhat)
	dhat := 0.0 // suffix sum of the adjoints of D_l
	for l := r - 1; l >= 0; l-- {
		rho := float64(r - l)
		nl := nrm[l]
		rn := 2 * rho * nl
		nb := rn * dd[l]
		ql, gr := q[l*k:l*k+k], g[l*k:l*k+k]
		for i := range ql {
			gil := gr[i]
			gh := ghat[i]
			nb += 2*rho*w[i]*gil + gh*ql[i]
			gl[i] += gh * gil
			gw[i] += rn * gil
			qh := qhat[i] + gh*nl
			qhat[i] = qh
			ql[i] = qh // Q's adjoint, suffix-summed, for the pass below
			ghat[i] = rn*w[i] + lam[i]*gh
		}
		nbar[l] = nb
		dhat += rho * nl * nl
		dbar[l] = 2 * d[l] * dhat
	}
	// Q_i(l) = sum_{s <= l} lam_i^s d_s, then d_s = sum_i w_i lam_i^(s-1):
	// one pass over s with p0 = lam^s, p1 = lam^(s-1), p2 = lam^(s-2) (0
	// where the exponent is negative: their factors vanish there).
	p0, p1, p2 := work[5*k:6*k], work[6*k:7*k], work[7*k:8*k]
	for i := range p0 {
		p0[i], p1[i], p2[i] = 1, 0, 0
	}
	clear(ghat) // now sum_s dbar_s s lam^(s-1) d_s
	clear(qhat) // now sum_s dbar_s (s-1) lam^(s-2)
	for s := 0; s < r; s++ {
		ql := q[s*k : s*k+k]
		db := dbar[s]
		fs, ds := float64(s), d[s]
		for i := range ql {
			db += ql[i] * p0[i]
			ghat[i] += ql[i] * fs * p1[i] * ds
		}
		if s >= 1 {
			for i := range ql {
				gw[i] += db * p1[i]
				qhat[i] += db * (fs - 1) * p2[i]
			}
		}
		for i := range ql {
			p2[i], p1[i] = p1[i], p0[i]
			p0[i] = flush(p0[i] * lam[i])
		}
	}
	for i := range gl {
		gl[i] += ghat[i] + w[i]*qhat[i]
	}
	// n_j = sqrt(sum_{t <= R-1-j} c_t^2): c_t's adjoint is 2 c_t times the
	// sum over j <= R-1-t of nbar_j / (2 n_j).
	cbar := o.buf(8, r)
	acc := 0.0
	for j := 0; j < r; j++ {
		acc += nbar[j] / (2 * nrm[j])
		cbar[r-1-j] = 2 * c[r-1-j] * acc
	}
	bltStatesAdjoint(w, lam, states, cbar, gw, gl)
	return loss
}

// minSepLoss returns ||C u||^2 ||A T_d||_F^2 with C u computed for the
// smallest non-increasing majorant m of |c| (m_t = max_{s >= t} |c_s|) in
// place of C's first column c, u the indicator of {0, b, ..., (k'-1) b}
// and k' = min(kk, ceil(R/b)), and, for prefix sums, its gradient if gw is
// not nil. Where c is non-negative and non-increasing, m = c and ||C u|| is
// the exact sensitivity under b-min-separation (Kalinin and Lampert 2024,
// Thm. 2; the rule of [ToeplitzMinSepSensitivity], which [SensitivityOf]
// applies to such a C); elsewhere it is a never-lower bound (|X_ij| <=
// X^m_ij entrywise for the Gram matrices, and m's worst pattern is the one
// b apart from round 0), so the fit may leave the monotone columns where
// that pays. By running sums, v_r = sum_{j < k', jb <= r} m_{r-jb} and
// ||C u||^2 = sum_r v_r^2, O(R); m's gradient goes to the entry of c at
// which each maximum is attained.
func (o *bltObjective) minSepLoss(w, lam, gw, gl []float64) float64 {
	r := o.r()
	d := o.coefficients(w, lam, r)
	c, states := o.bltStates(w, lam, r)
	m := o.dirty(11, r)
	arg := make([]int, r) // arg[t]: where m_t = |c_arg[t]|
	run, at := 0.0, r-1
	for t := r - 1; t >= 0; t-- {
		if a := math.Abs(c[t]); a > run || math.IsNaN(a) {
			if math.IsNaN(a) || math.IsInf(a, 0) {
				return math.Inf(1)
			}
			run, at = a, t
		}
		m[t], arg[t] = run, at
	}
	b := o.b
	kp := min(o.kk, (r-1)/b+1)
	v := o.buf(3, r)
	sens2 := separatedSq(m, b, kp, v)
	if !o.tw.prefix {
		return sens2 * o.tw.frobB(d)
	}
	frob := 0.0
	beta := 0.0
	for t := 0; t < r; t++ {
		beta += d[t]
		frob += float64(r-t) * beta * beta
	}
	if gw == nil {
		return sens2 * frob
	}
	clear(gw)
	clear(gl[:len(gw)])
	// frob: d_s's adjoint is sens2 * sum_{t >= s} 2 (R-t) beta_t.
	dbar := o.buf(4, r)
	beta = 0
	betas := o.buf(5, r)
	for t := 0; t < r; t++ {
		beta += d[t]
		betas[t] = beta
	}
	acc := 0.0
	for s := r - 1; s >= 0; s-- {
		acc += 2 * float64(r-s) * betas[s]
		dbar[s] = sens2 * acc
	}
	coefficientsAdjoint(w, lam, dbar, gw, gl)
	// sens2: m_t's adjoint is 2 sum_{j < k', t+jb < R} v_{t+jb}.
	cbar := o.buf(6, r)
	vb := o.buf(7, r)
	for t := r - 1; t >= 0; t-- {
		x := v[t]
		if t+b < r {
			x += vb[t+b]
		}
		if t+kp*b < r {
			x -= v[t+kp*b]
		}
		vb[t] = x
	}
	for t := range vb {
		if a := arg[t]; c[a] >= 0 {
			cbar[a] += frob * 2 * vb[t]
		} else {
			cbar[a] -= frob * 2 * vb[t]
		}
	}
	bltStatesAdjoint(w, lam, states, cbar, gw, gl)
	return sens2 * frob
}

// bltLogObjective returns f(x) = log loss(w, lambda) for x = (v, theta),
// with lambda_i = 1/(1+exp(-theta_i)) and w_i = v_i (1 - lambda_i) (see
// bltSet), and its gradient (analytic where o has one, else central finite
// differences).
func bltLogObjective(o *bltObjective, k int) (f func(x []float64) float64, grad func(g, x []float64)) {
	p := &BLTParams{Weights: make([]float64, k), Lambdas: make([]float64, k)}
	f = func(x []float64) float64 {
		bltSet(p, x)
		return math.Log(o.loss(p.Weights, p.Lambdas, nil, nil))
	}
	if !o.analytic() {
		return f, func(g, x []float64) { copy(g, fdGradient(f, x)) }
	}
	gw, gl := make([]float64, k), make([]float64, k)
	// Each evaluation computes the gradient too (the adjoint costs about
	// as much as the loss) and keeps it for grad, which L-BFGS calls at
	// the point it has just evaluated.
	lastX, lastG := make([]float64, 2*k), make([]float64, 2*k)
	valid := false
	eval := func(x []float64) float64 {
		bltSet(p, x)
		l := o.loss(p.Weights, p.Lambdas, gw, gl)
		for i := 0; i < k; i++ {
			lam := p.Lambdas[i]
			dlam := lam / (1 + math.Exp(x[k+i])) // dlambda/dtheta = lambda (1 - lambda)
			lastG[i] = gw[i] * (1 - lam) / l
			lastG[k+i] = (gl[i] - gw[i]*x[i]) * dlam / l
			if math.IsInf(l, 0) {
				lastG[i], lastG[k+i] = 0, 0
			}
		}
		copy(lastX, x)
		valid = true
		return math.Log(l)
	}
	grad = func(g, x []float64) {
		if !valid || !slices.Equal(x, lastX) {
			eval(x)
		}
		copy(g, lastG)
	}
	return eval, grad
}

// sqrtStart returns a starting point x = (v, theta) with k buffers: decay
// time scales 1/(1 - lambda_i) spread log-uniformly over [1.5, R] and the
// weights fitted by least squares to the coefficients of a(x)^{-1/2}, the
// inverse square root of the workload, in relative error at log-spaced
// lags (an exponential-sum approximation of the square root's C^{-1}). It
// returns nil if the fit fails.
func sqrtStart(tw toeplitzWorkload, k int) []float64 {
	r := len(tw.a)
	if r < 3 {
		return nil
	}
	target := tw.inverseSqrt(r)
	var lags []int
	for s, last := 1.0, 0; s < float64(r); s *= 1.15 {
		if l := int(s); l > last && math.Abs(target[l]) > 0 {
			lags = append(lags, l)
			last = l
		}
	}
	if len(lags) < k {
		return nil
	}
	x := make([]float64, 2*k)
	lam := make([]float64, k)
	for i := 0; i < k; i++ {
		tau := math.Max(1.5, math.Pow(float64(r), (float64(i)+0.5)/float64(k)))
		lam[i] = 1 - 1/tau
		x[k+i] = math.Log(tau - 1)
	}
	a := mat.NewDense(len(lags), k, nil)
	y := mat.NewVecDense(len(lags), nil)
	for row, l := range lags {
		scale := 1 / math.Abs(target[l])
		for i := 0; i < k; i++ {
			a.Set(row, i, math.Pow(lam[i], float64(l-1))*scale)
		}
		y.SetVec(row, target[l]*scale)
	}
	var sol mat.VecDense
	if err := sol.SolveVec(a, y); err != nil {
		return nil
	}
	for i := 0; i < k; i++ {
		x[i] = sol.AtVec(i) / (1 - lam[i])
	}
	return x
}

// fitBLTObjective returns parameters with k buffers that minimise o by
// continuation in the number of buffers: the fit with j buffers starts from
// the fit with j-1 buffers plus a buffer of weight 0 at a few time scales
// 1/(1 - lambda) spread log-uniformly over [1, R], and from [sqrtStart]
// with j buffers; the best optimised candidate is kept only if it lowers
// the loss, else the j-1 fit with a zero-weight buffer (the same C and B)
// is. So the loss never increases with j (by construction, not by luck of
// the optimiser), and every level costs O(R j) per evaluation.
func fitBLTObjective(ctx context.Context, o *bltObjective, k int) (*BLTParams, error) {
	levels, err := fitBLTLevels(ctx, o, k, nil)
	if err != nil {
		return nil, err
	}
	return bltParamsOf(levels[k-1]), nil
}

// bltParamsOf returns the parameters of x = (v, theta) (see bltSet).
func bltParamsOf(x []float64) *BLTParams {
	k := len(x) / 2
	p := &BLTParams{Weights: make([]float64, k), Lambdas: make([]float64, k)}
	bltSet(p, x)
	return p
}

// fitBLTLevels is [fitBLTObjective] returning the fit x = (v, theta) of
// every level j = 1..k (levels[j-1], 2j entries); seeds[j-1], where
// present and not nil, is one more start of level j. A level depends only
// on the levels below it and its seed, so the fit with j buffers is the
// same whatever k >= j.
func fitBLTLevels(ctx context.Context, o *bltObjective, k int, seeds [][]float64) ([][]float64, error) {
	r := o.r()
	var best []float64 // x = (v_1..v_j, theta_1..theta_j), see bltSet
	bestF := math.Log(o.loss(nil, nil, nil, nil))
	levels := make([][]float64, 0, k)
	for j := 1; j <= k; j++ {
		f, grad := bltLogObjective(o, j)
		// A level tries the fit with j-1 buffers plus a buffer of weight 0
		// at the time scales R^(1/2) and R, and in the widest gap of the
		// time scales used, and the square root's approximation
		// (sqrtStart); above R = 20000 only the widest gap, stopped
		// sooner (each evaluation costs O(R j); the time at R = 10^5).
		var starts [][]float64
		large := r > 20000
		stallIters := 10 // iterations without progress before a start stops
		fracs := []float64{0.5, 1}
		if large {
			stallIters, fracs = 5, nil
		}
		for _, frac := range fracs {
			x0 := grownBLT(best, j, math.Max(math.Pow(float64(r), frac), 1.5))
			if j == 1 {
				// d_1 = w_1 near -1/2 as for (1 - x)^{1/2}, but with
				// d(x) = 1 + w x / (1 - lambda x) nonzero on the unit
				// disc (w > lambda - 1), so that C = T_d^{-1} is bounded.
				x0[0] = -0.5
			}
			starts = append(starts, x0)
		}
		if j == 1 && large {
			starts = append(starts, []float64{-0.5, math.Log(math.Sqrt(float64(r)) - 1)})
		}
		if j >= 2 {
			// The new buffer in the widest gap, on a log scale, between
			// the time scales already used (and 1 and R).
			logs := []float64{0, math.Log(float64(r))}
			for _, th := range best[j-1:] {
				logs = append(logs, math.Log(1+math.Exp(th)))
			}
			slices.Sort(logs)
			lo, hi := 0.0, 0.0
			for i := 1; i < len(logs); i++ {
				if logs[i]-logs[i-1] > hi-lo {
					lo, hi = logs[i-1], logs[i]
				}
			}
			starts = append(starts, grownBLT(best, j, math.Max(math.Exp((lo+hi)/2), 1.5)))
		}
		if j >= 2 && !large {
			if x0 := sqrtStart(o.tw, j); x0 != nil {
				starts = append(starts, x0)
			}
		}
		if j <= len(seeds) && seeds[j-1] != nil {
			starts = append(starts, seeds[j-1])
		}
		var err error
		best, bestF, err = bestLevel(starts, f, best, bestF, func(x0 []float64) ([]float64, error) {
			return minimizeBLT(ctx, f, grad, x0, o.analytic(), stallIters)
		})
		if err != nil {
			return nil, err
		}
		levels = append(levels, best)
	}
	return levels, nil
}

// bestLevel returns the best of the points that minimize finds from the
// starts (of level j) at which f is finite, with its value, where that
// value is below fBelow, the value of below, the fit with j - 1 buffers;
// otherwise (no candidate improved) it returns below with a zero-weight
// buffer (see grownBLT), which has the same C and B, and fBelow.
func bestLevel(starts [][]float64, f func([]float64) float64, below []float64, fBelow float64, minimize func(x0 []float64) ([]float64, error)) ([]float64, float64, error) {
	best, bestF := []float64(nil), math.Inf(1)
	for _, x0 := range starts {
		if math.IsInf(f(x0), 0) {
			continue
		}
		x, err := minimize(x0)
		if err != nil {
			return nil, 0, err
		}
		if v := f(x); v < bestF {
			best, bestF = x, v
		}
	}
	if best == nil || !(bestF < fBelow) {
		return grownBLT(below, len(below)/2+1, 0), fBelow, nil
	}
	return best, bestF, nil
}

// fitBLTPlainLevels returns the levels j = 1..k of the fit that BLT used
// before its objective had a gradient (kept as a start and a candidate,
// so that no result is worse than that fit's): by continuation in the
// number of buffers as in [fitBLTLevels], each level from the one below
// plus a zero-weight buffer at the time scales R^(1/4), R^(1/2), R^(3/4)
// and R, in the parameters (w, theta) with finite-difference gradients
// ([minimizeSmooth]), minimising gamma2(c) ||A T_d||_F^2 with gamma2 the
// squared sensitivity of the Toeplitz C with first column c (evaluated as
// that fit did, so that it is reproduced: finite differences amplify
// rounding). The levels are returned as x = (v, theta) (see bltSet).
func fitBLTPlainLevels(ctx context.Context, tw toeplitzWorkload, k int, gamma2 func(c []float64) float64) ([][]float64, error) {
	r := len(tw.a)
	var best []float64 // (w_1..w_j, theta_1..theta_j)
	bestLoss := math.Inf(1)
	levels := make([][]float64, 0, k)
	for j := 1; j <= k; j++ {
		q := &BLTParams{Weights: make([]float64, j), Lambdas: make([]float64, j)}
		obj := func(x []float64) float64 {
			copy(q.Weights, x[:j])
			for i := 0; i < j; i++ {
				q.Lambdas[i] = 1 / (1 + math.Exp(-x[j+i]))
			}
			return logLoss(gamma2(bltInverse(q, r)) * tw.frobB(q.Coefficients(r)))
		}
		var starts [][]float64
		for _, frac := range []float64{0.25, 0.5, 0.75, 1} {
			tau := math.Max(math.Pow(float64(r), frac), 1.5)
			x0 := grownBLT(best, j, tau)
			if j == 1 {
				x0[0] = -0.5 / tau
			}
			starts = append(starts, x0)
		}
		var err error
		best, bestLoss, err = bestLevel(starts, obj, best, bestLoss, func(x0 []float64) ([]float64, error) { return minimizeSmooth(ctx, obj, x0) })
		if err != nil {
			return nil, err
		}
		v := slices.Clone(best)
		for i := 0; i < j; i++ {
			v[i] *= 1 + math.Exp(v[j+i]) // w = v (1 - lambda)
		}
		levels = append(levels, v)
	}
	return levels, nil
}

// minimizeBLT minimises f from x0: with the analytic gradient by L-BFGS
// until the gradient or the decrease of f reaches rounding, else by
// [minimizeSmooth] (finite differences). It returns the best point found,
// or ctx's error.
func minimizeBLT(ctx context.Context, f func([]float64) float64, grad func(g, x []float64), x0 []float64, analytic bool, stallIters int) ([]float64, error) {
	if !analytic {
		return minimizeSmooth(ctx, f, x0)
	}
	set := optim.Settings{GradTol: 1e-12, StallTol: 1e-10, StallIters: stallIters, MaxIter: 400, Memory: 40, GradMerit: true, AcceptFloor: true}
	return lbfgsBest(ctx, f, grad, x0, set, "the BLT parameters")
}

// grownBLT returns the parameters x = (v, theta) of j-1 buffers, best,
// with a j-th buffer of zero weight and time scale tau, theta =
// log(tau - 1) (lambda = 1 - 1/tau; see bltSet), or theta 0 for tau 0.
func grownBLT(best []float64, j int, tau float64) []float64 {
	x := make([]float64, 2*j)
	copy(x[:j-1], best[:j-1])
	copy(x[j:2*j-1], best[j-1:])
	if tau != 0 {
		x[2*j-1] = math.Log(tau - 1)
	}
	return x
}
