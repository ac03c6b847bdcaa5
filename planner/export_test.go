package planner

import "github.com/stepcost/stepcost/estimator/step"

// SetVerifyMemoryChecks sets the hook that sees every layout whose memory a search
// checks (nil to remove it).
func SetVerifyMemoryChecks(f func(*step.Estimator, step.Request, *step.MemoryBasis)) {
	verifyMemoryChecks = f
}
