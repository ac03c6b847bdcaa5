package planner

import "github.com/stepcost/stepcost/estimator/step"

// SetVerifyMemoryChecks sets the hook that sees every layout whose memory a search
// checks (nil to remove it).
func SetVerifyMemoryChecks(f func(*step.Estimator, step.Request, *step.MemoryBasis)) {
	verifyMemoryChecks = f
}

// SetVerifyPricedBounds sets the hook that sees every layout a search prices, with
// its bound and score, headroom and bound of the headroom (nil to remove it).
func SetVerifyPricedBounds(f func(r step.Request, bound, score, headroom, maxHead float64)) {
	verifyPricedBounds = f
}
