package tiers

import (
	"github.com/kvtier/kvtier/option"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/tiers/tierspec"
)

func init() {
	Register(Spec{
		Desc:   tierspec.Host,
		Timing: Queued,
		New: func(env Env) Tier {
			o := OptionsOf(env, NewHostOptions)
			// On the host backend the working pool is DRAM too: the row's
			// path column says so (dram-to-dram), the device column names
			// the CPU stand-in.
			return &gatherTier{env: env, srcKind: o.Mem, name: "host"}
		},
		NewOptions: func() Options { return NewHostOptions() },
		Columns: []results.Column{
			results.Text("numa_placement", "host: where the source pool's pages went under --numa: nodeN (bound), or nodeN preferred when the node's free memory could not hold the pool (the rest on other nodes); empty: the kernel's choice"),
		},
	})
}

// HostOptions are the host tier's own options.
type HostOptions struct {
	Mem MemKind // Pinned or Pageable: the source pool's memory
}

// NewHostOptions returns the host tier's defaults: a pinned source pool.
func NewHostOptions() *HostOptions { return &HostOptions{Mem: Pinned} }

// Fields declares host-mem.
func (o *HostOptions) Fields() []option.Field {
	return []option.Field{{Name: "host-mem", Ptr: (*string)(&o.Mem), Usage: "host tier pool memory (the source of a load, the destination of a store): pinned or pageable"}}
}

// Validate accepts pinned and pageable.
func (o *HostOptions) Validate() error {
	if o.Mem != Pinned && o.Mem != Pageable {
		return option.Errorf("host-mem", "want pinned or pageable, got %q", o.Mem)
	}
	return nil
}

// Settings records host_mem.
func (o *HostOptions) Settings() map[string]string {
	return map[string]string{"host_mem": string(o.Mem)}
}
