package mechanism

// independent is the mechanism of the identity factorization: round r's
// vector is noise row r, with no state.
type independent struct{}

func (independent) prepare(int) {}

func (independent) block(g *gen, r, lo int, dst []float64) { g.fill(r, lo, dst) }

func (independent) stateBytes() int64 { return 0 }

func (independent) seek(*stream, int) {}

func (independent) String() string { return "independent" }
