package model_test

import (
	"fmt"

	"github.com/stepcost/stepcost/estimator/model"
)

func ExampleLookup() {
	a, err := model.Lookup("meta-llama/Meta-Llama-3.1-405B")
	if err != nil {
		panic(err)
	}
	p := a.Params()
	fmt.Printf("%s: %d layers, hidden %d, %d/%d heads, %.1fB parameters\n",
		a.Name, a.Layers, a.Hidden, a.Heads, a.KVHeads, p.Total/1e9)
	// Output: llama3-405b: 126 layers, hidden 16384, 128/8 heads, 405.9B parameters
}

func ExampleArch_Params() {
	a, _ := model.Lookup("mixtral-8x7b")
	p := a.Params()
	fmt.Printf("total %.1fB, active %.1fB\n", p.Total/1e9, p.Active/1e9)
	// Output: total 46.7B, active 12.9B
}

func ExampleFromParams() {
	a, _, err := model.FromParams(13e9)
	if err != nil {
		panic(err)
	}
	fmt.Println(a.Name, a.Layers, a.Hidden, a.Heads, a.FFN)
	// Output: derived-13b 40 5120 40 20480
}

func ExampleArch_GEMMs() {
	a, _ := model.Lookup("llama3-70b")
	for _, g := range a.GEMMs(0, model.Partition{MicroBatch: 1, Seq: 8192, TP: 8, Causal: true}) {
		fmt.Printf("%-12s %5d × %5d × %5d ×%d\n", g.Name, g.M, g.N, g.K, g.Count)
	}
	// Output:
	// qkv           8192 ×  1280 ×  8192 ×1
	// scores        8192 ×  4096 ×   128 ×8
	// context       8192 ×   128 ×  4096 ×8
	// out           8192 ×  8192 ×  1024 ×1
	// mlp_gate_up   8192 ×  7168 ×  8192 ×1
	// mlp_down      8192 ×  8192 ×  3584 ×1
}
