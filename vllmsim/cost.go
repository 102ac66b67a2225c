package vllmsim

import "github.com/kvtier/kvtier/kv"

// A costModel turns the work of an engine step into modeled seconds. It is
// a pure function of the geometry and the profile: no clock, no state.
type costModel struct {
	p Profile
	// gemmFLOPsPerToken is the linear-layer work of one prefill token:
	// two FLOPs per active weight.
	gemmFLOPsPerToken float64
	// attnFLOPsPerPair is the attention work of one (query, key) pair
	// summed over layers and heads: scores plus weighted values.
	attnFLOPsPerPair float64
	kvBytesPerToken  float64
}

func newCostModel(g kv.Geometry, p Profile) costModel {
	return costModel{
		p:                 p,
		gemmFLOPsPerToken: 2 * activeWeights(g),
		attnFLOPsPerPair:  attnFLOPsPerPair(g),
		kvBytesPerToken:   float64(g.BytesPerToken()),
	}
}

// activeWeights is the number of weights one token multiplies through:
// attention projections and the MLP or the experts it is routed to (and
// the shared experts and router), over all layers. Embeddings and the LM
// head (run for one token per request) are left out.
func activeWeights(g kv.Geometry) float64 {
	h := float64(g.Hidden)
	var attn float64
	if g.MLA() {
		qk := float64(g.QKNopeHeadDim + g.QKRopeHeadDim)
		heads := float64(g.Heads)
		q := h * qk * heads
		if g.QLoraRank > 0 {
			q = h*float64(g.QLoraRank) + float64(g.QLoraRank)*heads*qk
		}
		kv := h*float64(g.KVLoraRank+g.QKRopeHeadDim) + float64(g.KVLoraRank)*heads*float64(g.QKNopeHeadDim+g.VHeadDim)
		o := heads * float64(g.VHeadDim) * h
		attn = q + kv + o
	} else {
		qDim := float64(g.Heads * g.HeadDim)
		kvDim := float64(g.KVHeads * g.HeadDim)
		attn = h*qDim + 2*h*kvDim + qDim*h
	}
	dense := 3 * h * float64(g.Intermediate)
	moe := dense
	if g.Experts > 0 {
		shared := float64(g.SharedIntermediate)
		if shared == 0 {
			shared = float64(g.MoEIntermediate * g.SharedExperts)
		}
		moe = 3*h*float64(g.MoEIntermediate)*float64(g.ExpertsPerToken) + 3*h*shared + h*float64(g.Experts)
	}
	denseLayers := float64(min(g.DenseLayers, g.Layers))
	if g.Experts == 0 {
		denseLayers = float64(g.Layers)
	}
	return float64(g.Layers)*attn + denseLayers*dense + (float64(g.Layers)-denseLayers)*moe
}

// attnFLOPsPerPair is 2·d FLOPs for the score and 2·d for the value of
// every head of every layer.
func attnFLOPsPerPair(g kv.Geometry) float64 {
	qk, v := g.HeadDim, g.HeadDim
	if g.MLA() {
		qk, v = g.QKNopeHeadDim+g.QKRopeHeadDim, g.VHeadDim
	}
	return 2 * float64(g.Heads) * float64(g.Layers) * float64(qk+v)
}

// A chunk is part of one request's prefill computed in a step: Tokens new
// tokens after Context tokens whose KV is already there.
type chunk struct {
	Tokens  int
	Context int
}

// A stepShape is the work of one engine step.
type stepShape struct {
	Decodes       int   // sequences decoding one token each
	DecodeContext int64 // KV tokens all decoding sequences attend to
	Chunks        []chunk
	Admitted      []int // prompt lengths of requests first scheduled in this step
}

func (s stepShape) empty() bool { return s.Decodes == 0 && len(s.Chunks) == 0 }

// rate returns work/rate seconds, or 0 when the rate is not modeled.
func rate(work, perSecond float64) float64 {
	if perSecond <= 0 {
		return 0
	}
	return work / perSecond
}

// stepTime is the modeled duration of one engine step.
func (c costModel) stepTime(s stepShape) float64 {
	if s.empty() {
		return 0
	}
	p := c.p
	t := p.StepBase + p.DecodePerSeq*float64(s.Decodes)
	var gemm, attn float64
	for _, ch := range s.Chunks {
		n, ctx := float64(ch.Tokens), float64(ch.Context)
		gemm += n
		// causal: token i of the chunk attends ctx + i + 1 keys.
		attn += n*ctx + n*(n+1)/2
	}
	t += rate(gemm*c.gemmFLOPsPerToken, p.GEMMTFLOPS*1e12)
	t += rate(attn*c.attnFLOPsPerPair, p.AttnTFLOPS*1e12)
	t += rate(float64(s.DecodeContext)*c.kvBytesPerToken, p.HBMGBps*1e9)
	for _, l := range s.Admitted {
		t += p.AdmitBase + p.AdmitPerToken*float64(l)
	}
	return t
}

// apiTime is the front-end cost of a request of prompt tokens arriving
// while load other requests are in the engine.
func (c costModel) apiTime(prompt, load int) float64 {
	return c.p.APIBase + c.p.APIPerToken*float64(prompt) + c.p.APIPerRunning*float64(load)
}

// decodeCredit is the number of decode steps a prefill step earns while
// decoding sequences wait (see engine.schedule).
func (c costModel) decodeCredit(decoding int) float64 {
	if decoding <= 0 {
		return 0
	}
	p, n := c.p, float64(decoding-1)
	if n == 0 {
		return p.InterleaveBase
	}
	return p.InterleaveBase + (p.InterleaveMax-p.InterleaveBase)*n/(n+p.InterleaveHalf)
}

// hostLoadTime is the time to bring tokens of KV back from CPU memory.
func (c costModel) hostLoadTime(tokens int) float64 {
	return rate(float64(tokens)*c.kvBytesPerToken, c.p.HostGBps*1e9)
}

// hostStoreTime is the time to copy tokens of KV into CPU memory, over the
// device-to-host direction.
func (c costModel) hostStoreTime(tokens int) float64 {
	return rate(float64(tokens)*c.kvBytesPerToken, c.p.HostStoreGBps*1e9)
}

// remoteLoadTime is the time to pull tokens of KV from a peer.
func (c costModel) remoteLoadTime(tokens int) float64 {
	return rate(float64(tokens)*c.kvBytesPerToken, c.p.RemoteGBps*1e9)
}

// Tier names of estimateTTFT.
const (
	tierMiss   = "miss"
	tierGPU    = "gpu"
	tierCPU    = "cpu"
	tierRemote = "remote"
)

// estimateTTFT is the TTFT of a request of prompt tokens whose reusable
// prefix sits in tier, with chunked prefill of budget tokens per step and
// blocks of block tokens, beside decodes sequences decoding (their
// interleaved decode steps included): what the engine does, in closed
// form.
func (c costModel) estimateTTFT(tier string, prompt, block, budget, decodes int) float64 {
	hit := 0
	if tier != tierMiss {
		hit = (prompt - 1) / block * block
	}
	t := c.apiTime(prompt, decodes)
	switch tier {
	case tierCPU:
		t += c.hostLoadTime(hit)
	case tierRemote:
		t += c.remoteLoadTime(hit)
	}
	decodeStep := c.stepTime(stepShape{Decodes: decodes})
	credit := 0.0
	for done, first := hit, true; done < prompt; first = false {
		for ; decodes > 0 && credit >= 1; credit-- {
			t += decodeStep
		}
		n := min(prompt-done, budget)
		s := stepShape{Chunks: []chunk{{Tokens: n, Context: done}}}
		if first {
			s.Admitted = []int{prompt}
		}
		t += c.stepTime(s)
		credit += c.decodeCredit(decodes)
		done += n
	}
	return t
}
