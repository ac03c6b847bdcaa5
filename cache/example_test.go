package cache_test

import (
	"context"
	"fmt"
	"time"

	"github.com/stepcost/stepcost/cache"
)

type estimate struct{ StepSeconds float64 }

func Example() {
	c, err := cache.New[*estimate](cache.Config{MaxCost: 10_000, TTL: time.Hour}, nil)
	if err != nil {
		panic(err)
	}
	defer c.Close()

	// In a server: the full method name and the deterministic encoding of the
	// normalised request, e.g. proto.MarshalOptions{Deterministic: true}.Marshal(req).
	key := cache.Key([]byte("/stepcost.v1.EstimatorService/Estimate"), []byte(`{"gpus":8}`))
	est, hit, err := c.Get(context.Background(), key, func(ctx context.Context) (*estimate, error) {
		return &estimate{StepSeconds: 1.25}, nil // the expensive computation
	})
	if err != nil {
		panic(err)
	}
	// est is shared with every later caller of key: read it, never modify it.
	fmt.Println(est.StepSeconds, hit)
	// Output: 1.25 false
}
