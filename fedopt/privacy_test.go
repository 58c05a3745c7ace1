package fedopt

import (
	"testing"

	"github.com/dpmf/dpmf/plan"
)

// The plan names the algorithms as fedopt does, and knows which are
// private.
func TestPlanAlgorithmNames(t *testing.T) {
	private := map[string]bool{plan.AlgoCorrelated: true, plan.AlgoBaselineCorrelated: true, plan.AlgoIndependent: true, plan.AlgoNonPrivate: false}
	for _, a := range Algorithms() {
		p := &plan.Plan{Algorithm: a.String()}
		want, ok := private[a.String()]
		if !ok || want != a.Private() || p.Private() != a.Private() {
			t.Errorf("%v: the plan knows it %v, private %v; fedopt says %v", a, ok, p.Private(), a.Private())
		}
	}
}
