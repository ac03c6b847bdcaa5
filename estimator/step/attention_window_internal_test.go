package step

import (
	"math"
	"testing"

	"github.com/stepcost/stepcost/estimator/hardware"
	"github.com/stepcost/stepcost/estimator/model"
)

// TestBandTiles checks the tile count against counts made by hand from the tile sizes.
// With q query rows and k keys a tile, query tile j (queries jq … (j+1)q − 1) reaches
// the key tile holding its last query, ⌈(j+1)q/k⌉ − 1; with a window of w keys it
// starts at the key tile holding key jq − (w − 1).
func TestBandTiles(t *testing.T) {
	cases := []struct {
		name      string
		seq, w    int
		tile      attnTile
		want      int
		reasoning string
	}{
		// 8192/256 = 32 query tiles; tile j ends at key tile 2j+1: Σ_{j<32} 2(j+1) = 32·33.
		{"causal 8k, 256×128", 8192, 0, attnTile{256, 128}, 32 * 33, "Σ 2(j+1) over 32 query tiles"},
		// Tile j ≥ 1 starts at key 256j − 127, in key tile 2j − 1, and ends in 2j+1:
		// three tiles; tile 0 has key tiles 0 and 1.
		{"window 128, 256×128", 8192, 128, attnTile{256, 128}, 2 + 31*3, "three key tiles (2j−1 … 2j+1) per query tile, two in the first"},
		// 64 query tiles; tile j ends at key tile j: Σ_{j<64} (j+1) = 64·65/2.
		{"causal 8k, 128×128", 8192, 0, attnTile{128, 128}, 64 * 65 / 2, "Σ (j+1) over 64 query tiles"},
		// Tile j ≥ 1 starts at key 128j − 127, in key tile j − 1, and ends in j.
		{"window 128, 128×128", 8192, 128, attnTile{128, 128}, 1 + 63*2, "two key tiles per query tile, one in the first"},
		// Queries 0–255 reach key tile 1 (two tiles); queries 256–299 reach key 299,
		// in key tile 2 (three tiles).
		{"causal 300, ragged", 300, 0, attnTile{256, 128}, 2 + 3, "2 key tiles for queries 0–255, 3 for 256–299"},
		// Queries 256–299 reach back to key 256 − 127 = 129, in key tile 1: tiles 1 and 2.
		{"window 128, ragged", 300, 128, attnTile{256, 128}, 2 + 2, "queries 256–299 reach back to key 129: tiles 1 and 2"},
		// Six query tiles of 192 (the last 64 rows); their last queries 191, 383,
		// 575, 767, 959, 1023 sit in key tiles 1, 2, 4, 5, 7, 7; a window of 1024
		// reaches key 0 from every query, so it is the causal count.
		{"window 1024 over 1024, 192×128", 1024, 1024, attnTile{192, 128}, 2 + 3 + 5 + 6 + 8 + 8, "a window as long as the sequence is causal"},
		{"causal 1024, 192×128", 1024, 0, attnTile{192, 128}, 2 + 3 + 5 + 6 + 8 + 8, "key tiles 0 … 1, 2, 4, 5, 7, 7"},
	}
	for _, c := range cases {
		if got := bandTiles(c.seq, c.w, c.tile); got != c.want {
			t.Errorf("%s: %d tiles, want %d (%s)", c.name, got, c.want, c.reasoning)
		}
	}
}

// TestWindowTileShare checks the windowed layer's share of causal attention's time on
// Blackwell's cuDNN tiles (forward 2 × 128 query rows by 128 keys, backward 128 × 128)
// for gpt-oss's window (128 keys over 8k) against the hand counts above, and that a
// window no shorter than the sequence is causal attention.
func TestWindowTileShare(t *testing.T) {
	f, b := windowTileShare(hardware.Blackwell, "megatron-core", false, 64, 8192, 128)
	wantF, wantB := float64(2+31*3)/(32*33), float64(1+63*2)/(64*65/2)
	if math.Abs(f-wantF) > 1e-12 || math.Abs(b-wantB) > 1e-12 {
		t.Errorf("Blackwell, window 128 over 8k: %v / %v, want 95/1056 and 127/2080", f, b)
	}
	if f, b := windowTileShare(hardware.Hopper, "megatron-core", false, 64, 4096, 4096); f != 1 || b != 1 {
		t.Errorf("window of the whole sequence: %v / %v, want 1", f, b)
	}
	// The tiles cost more than the scores: a windowed layer is never priced below
	// its share of the scores (model.Arch.AttentionSpan of one windowed layer).
	for _, arch := range []hardware.Arch{hardware.Ampere, hardware.Hopper, hardware.Blackwell} {
		for _, hd := range []float64{64, 128} {
			for _, w := range []int{128, 512, 4096} {
				const s = 32768
				share := model.Arch{Layers: 1, SlidingWindow: w}.AttentionSpan(s)
				f, b := windowTileShare(arch, "megatron-core", false, hd, s, w)
				if f < share || b < share {
					t.Errorf("%s d%g window %d: tile shares %v / %v below the score share %v", arch, hd, w, f, b, share)
				}
			}
		}
	}
}
