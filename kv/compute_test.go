package kv

import "testing"

func TestPrefillGEMMsDense(t *testing.T) {
	t.Parallel()
	g := tinyGeometry() // 2 layers, 4 heads, 2 KV heads, dim 8, hidden 32, mlp 64
	ops := PrefillGEMMs(g, 20)
	// Per layer: qkv, one attention tile (scores, pv), o, gate_up, down.
	if len(ops) != 2*6 {
		t.Fatalf("%d ops: %+v", len(ops), ops)
	}
	per := 2.0 * 20 * ((4+4)*8*32 + // qkv: N = (4+2·2)·8
		20*8*4 + // scores: 20×20×8 ×4 heads
		8*20*4 + // pv: 20×8×20 ×4 heads
		32*32 + // o: K = 4·8
		2*64*32 + // gate_up
		32*64) // down
	if got := PrefillFLOPs(g, 20); got != 2*per {
		t.Errorf("PrefillFLOPs = %v, want %v", got, 2*per)
	}
}

func TestPrefillGEMMsQwen3Coder(t *testing.T) {
	t.Parallel()
	g, _ := LookupModel("qwen3-coder-30b-a3b")
	const tokens = 1024
	// Per layer and token, without attention: qkv 2·2048·(32+8)·128, o 2·4096·2048,
	// router 2·2048·128, experts 8·(2·2048·1536 + 2·768·2048).
	lin := 2.0 * (2048*40*128 + 4096*2048 + 2048*128 + 8*(2048*1536+768*2048))
	attn := 2.0 * (1024 * 1024 * 128 * 32 * 2) // one tile: scores + pv
	want := 48 * (lin*tokens + attn)
	if got := PrefillFLOPs(g, tokens); got != want {
		t.Errorf("PrefillFLOPs = %.6g, want %.6g", got, want)
	}
	// ~5.5 GFLOP per token of linear work.
	if perTok := 48 * lin; perTok < 5.3e9 || perTok > 5.6e9 {
		t.Errorf("linear FLOPs per token = %.3g", perTok)
	}
}

func TestPrefillGEMMsTiledCausal(t *testing.T) {
	t.Parallel()
	g, _ := LookupModel("qwen3-coder-30b-a3b")
	const tokens = 65536
	tile := AttnTile(g, tokens)
	if tile != 128 {
		t.Errorf("tile at 64k = %d", tile)
	}
	if got := AttnTile(g, 1024); got != 2048 {
		t.Errorf("tile at 1k = %d", got)
	}
	tiles := 0
	for _, op := range PrefillGEMMs(g, tokens)[:1+2*tokens/tile+1] {
		if op.Name == "attn_scores" {
			tiles++
			if want := tiles * tile; op.N != want || op.M != tile {
				t.Fatalf("tile %d sees %d keys in %d rows, want %d", tiles, op.N, op.M, want)
			}
			if bytes := int64(op.M) * int64(op.N) * int64(op.Batch) * 2; bytes > 512<<20 {
				t.Errorf("scores operand %d bytes", bytes)
			}
		}
	}
	if tiles != tokens/tile {
		t.Errorf("%d tiles", tiles)
	}
}

func TestPrefillGEMMsDeepSeek(t *testing.T) {
	t.Parallel()
	g, _ := LookupModel("deepseek-v3")
	ops := PrefillGEMMs(g, 16)
	count := map[string]int{}
	for _, op := range ops {
		count[op.Name]++
	}
	if count["mlp_gate_up"] != 3 || count["moe_gate_up"] != 58 || count["shared_gate_up"] != 58 || count["kv_b_proj"] != 61 || count["qkv_proj"] != 0 {
		t.Errorf("op counts = %v", count)
	}
	for _, op := range ops {
		if op.Name == "kv_a_proj" && op.N != 576 {
			t.Errorf("kv_a_proj N = %d, want 512+64", op.N)
		}
		if op.Name == "attn_scores" && (op.K != 192 || op.Batch != 128) {
			t.Errorf("attn_scores = %+v", op)
		}
		if op.Name == "moe_down" && (op.Batch != 8 || op.K != 2048) {
			t.Errorf("moe_down = %+v", op)
		}
	}
}
