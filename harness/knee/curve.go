package knee

import (
	"slices"

	"github.com/kvtier/kvtier/replayer"
	"github.com/kvtier/kvtier/results"
)

// curvePoints is how many capacities, evenly spaced, the model's curve is
// written at (besides the measured capacities and the working set).
const curvePoints = 120

// Orders of the model's curve (the order column).
const (
	OrderTimestamp = "timestamp"
	OrderSessions  = "sessions round robin"
)

// writeCurve writes the LRU model's hit ratio of the workload against
// the server's capacity, fed the requests in the order the dispatch is
// expected to send them, from 0 to a quarter past the largest capacity
// or the working set.
func writeCurve(sink results.Sink, cfg Config, w *replayer.Workload, ws int64) error {
	c, err := replayer.Model(w.Order(cfg.Replay.Dispatch, cfg.Replay.Concurrency), w.BlockTokens, 1)
	if err != nil {
		return err
	}
	bs := int64(cfg.BlockSize)
	top := int64(slices.Max(cfg.Capacities))
	top = max(top, ws/bs) * 5 / 4
	caps := []int64{ws / bs}
	for _, b := range cfg.Capacities {
		caps = append(caps, int64(b))
	}
	for i := range curvePoints + 1 {
		caps = append(caps, top*int64(i)/curvePoints)
	}
	slices.Sort(caps)
	order := OrderTimestamp
	if cfg.Replay.Dispatch == replayer.DispatchSession {
		order = OrderSessions
	}
	for _, b := range slices.Compact(caps) {
		tokens := b * bs
		r := results.Row{Status: results.StatusOK, Extra: map[string]string{}}
		r.Set(results.ColTrace, w.Name)
		r.Set(results.ColOrder, order)
		r.Set("block_size", cfg.BlockSize)
		r.Set(results.ColCapacityBlocks, b)
		r.Set(results.ColCapacityTokens, tokens)
		if cfg.BytesPerToken > 0 {
			r.Set(results.ColCapacityBytes, tokens*cfg.BytesPerToken)
		}
		r.Set(results.ColHitRatio, c.HitRatio(tokens/int64(w.BlockTokens)))
		r.Set(results.ColPredicted, true)
		if err := sink.Write(r); err != nil {
			return err
		}
	}
	return nil
}
