package fednet

import (
	"errors"

	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/secagg"
)

// TEMPORARY until secagg-quant lands.
func releaseRingSum(core *fedopt.Server, sum []uint64, present int) error {
	return errors.New("not yet")
}

func secureQuantizer(opt ServerOptions) (secagg.Quantizer, error) {
	return secagg.NewQuantizer(opt.Shape.Learners, opt.Shape.Tau, opt.Config.Clip)
}
