package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/stepcost/stepcost/estimator/catalog"
	"github.com/stepcost/stepcost/estimator/model"
	"github.com/stepcost/stepcost/internal/wire"
)

func catalogCommand(fs *pflag.FlagSet) runFunc {
	asJSON := fs.Bool("json", false, "print JSON")
	return func(_ context.Context, args []string, stdout, stderr io.Writer) error {
		gpus, systems, models := catalog.GPUs(), catalog.Systems(), model.Catalog()
		if *asJSON {
			return printProtoJSON(stdout, wire.Catalog())
		}
		t := table{head: []string{"gpu", "arch", "bf16 TFLOP/s", "fp8 TFLOP/s", "HBM GB", "HBM GB/s", "NVLink GB/s"}}
		for _, g := range gpus {
			fp8 := "-"
			if v, ok := g.PeakTFLOPS["fp8"]; ok {
				fp8 = fmt.Sprintf("%.0f", v)
			}
			t.add(g.Name, string(g.Arch), fmt.Sprintf("%.0f", g.PeakTFLOPS["bf16"]), fp8, fmt.Sprintf("%.0f", g.MemoryGB),
				fmt.Sprintf("%.0f", g.MemoryBandwidthGBps), fmt.Sprintf("%.0f", g.NVLinkGBps))
		}
		t.write(stdout)
		fmt.Fprintln(stdout)
		s := table{head: []string{"system", "gpu", "gpus/node", "scale-up", "nics", "network"}, wrap: "scale-up"}
		for _, sp := range systems {
			up := string(sp.Intra.Kind)
			if sp.Intra.NVLS {
				up += "+nvls"
			}
			if sp.Intra.DomainNodes > 1 {
				up += fmt.Sprintf(" (%d-node domain)", sp.Intra.DomainNodes)
			}
			nics := "-"
			if sp.NICs.PerNode > 0 {
				nics = fmt.Sprintf("%d×%gG %s", sp.NICs.PerNode, sp.NICs.Gbps, sp.NICs.Kind)
			}
			net := "fat tree"
			if sp.Network.RailOptimized {
				net = "rail-optimised"
			}
			if o := sp.Network.Oversubscription; o > 1 {
				net += fmt.Sprintf(", %g:1", o)
			}
			s.add(sp.Name, sp.GPU.Name, fmt.Sprint(sp.GPUsPerNode), up, nics, net)
		}
		s.write(stdout)
		fmt.Fprintln(stdout)
		m := table{head: []string{"model", "params", "layers", "hidden", "heads", "kv heads", "ffn", "vocab", "moe"}}
		for _, a := range models {
			p := a.Params()
			moe := "-"
			if a.MoE != nil {
				moe = fmt.Sprintf("%d experts, top-%d (%.3gB active)", a.MoE.Experts, a.MoE.TopK, p.Active/1e9)
			}
			kv := a.KVHeads
			if kv == 0 {
				kv = a.Heads
			}
			size := fmt.Sprintf("%.3gB", p.Total/1e9)
			if p.Total >= 1e12 {
				size = fmt.Sprintf("%.3gT", p.Total/1e12)
			}
			m.add(a.Name, size, fmt.Sprint(a.Layers), fmt.Sprint(a.Hidden), fmt.Sprint(a.Heads), fmt.Sprint(kv), fmt.Sprint(a.FFN), fmt.Sprint(a.Vocab), moe)
		}
		m.write(stdout)
		return nil
	}
}
