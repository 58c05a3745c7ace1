package dataset

// Samples is a read-only view of m samples of dimension Dim: sample j has
// features X[j*Dim:(j+1)*Dim] and label Y[j].
type Samples struct {
	X   []float64
	Y   []float64
	Dim int
}

// Len returns the number of samples.
func (s Samples) Len() int { return len(s.Y) }

// Row returns the features of sample j (a view, not a copy).
func (s Samples) Row(j int) []float64 { return s.X[j*s.Dim : (j+1)*s.Dim : (j+1)*s.Dim] }
