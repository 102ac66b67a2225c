package cli

import (
	"cmp"
	"slices"

	"github.com/spf13/pflag"

	"github.com/kvtier/kvtier/registry"
)

// A FlagGroup is a named set of flags that several commands share: the
// flags of one concern, with the heading they are listed under, the
// environment variables that stand for them, and how those are read.
// A group sits beside its concern, as the go command keeps AddBuildFlags
// in its build package: tierflag.BackendGroup beside the backends,
// peerflag.PeerGroup and peerflag.QoSGroup beside the peer,
// servingflag.ServerGroup beside the serving client. cli holds only the
// groups every measuring command takes (OutputGroup, PolicyGroup,
// ModelGroup) and knows no other.
//
// A group registers itself once (NewGroup), and its flag struct adds its
// flags through Bind, which records the group's Name on each of them
// (GroupAnnotation). From that record a command's -h can print its flags
// group by group, each under its Heading (GroupOf), and the environment
// a command reads follows from the groups it binds (EnvOf), so that a
// command that binds no RDMA flag never reads NCCL's variables.
type FlagGroup struct {
	Name    string // unique, e.g. "backend"; the value of GroupAnnotation
	Heading string // the title its flags are listed under, e.g. "Backend"
	Order   int    // its place among groups, in -h and in the environment list
	// Env are the environment variables the group reads: one that stands
	// for a flag (EnvVar.Flag) where the command has that flag, the others
	// wherever the command binds the group or a group of ReadBy.
	Env []EnvVar
	// ReadBy names the groups whose commands read this group's Env too,
	// though they do not bind it (the native libraries are read by every
	// command that writes a manifest).
	ReadBy []string
	// FromEnv, if set, runs once the command line has parsed, for the
	// commands that bind the group: it sets the group's flags the command
	// line left out from the environment getenv reads. Its error is bad
	// input.
	FromEnv func(fs *pflag.FlagSet, getenv func(string) string) error
}

// GroupAnnotation annotates each flag a FlagGroup added with the group's
// name.
const GroupAnnotation = "kvtier-group"

var groups = registry.New("flag group", func(g *FlagGroup) string { return g.Name },
	func(a, b *FlagGroup) int { return cmp.Compare(a.Order, b.Order) })

// NewGroup registers g and returns it; the package that owns the group
// calls it once, as it initializes (var BackendGroup = cli.NewGroup(...)).
// A name registered twice is a programming error and panics.
func NewGroup(g FlagGroup) *FlagGroup {
	groups.Add(&g)
	return &g
}

// Groups returns every registered group in order.
func Groups() []*FlagGroup { return groups.All() }

// GroupOf returns the group that added f (nil, false for a command's own
// flag).
func GroupOf(f *pflag.Flag) (*FlagGroup, bool) {
	names := f.Annotations[GroupAnnotation]
	if len(names) != 1 {
		return nil, false
	}
	return groups.Lookup(names[0])
}

// Bind calls add, which adds flags to fs, and records g as the group of
// every flag it added.
func (g *FlagGroup) Bind(fs *pflag.FlagSet, add func(fs *pflag.FlagSet)) {
	had := map[string]bool{}
	fs.VisitAll(func(f *pflag.Flag) { had[f.Name] = true })
	add(fs)
	fs.VisitAll(func(f *pflag.Flag) {
		if !had[f.Name] {
			fs.SetAnnotation(f.Name, GroupAnnotation, []string{g.Name})
		}
	})
}

// boundNames are the names of the groups whose flags fs holds.
func boundNames(fs *pflag.FlagSet) map[string]bool {
	names := map[string]bool{}
	fs.VisitAll(func(f *pflag.Flag) {
		if g, ok := GroupOf(f); ok {
			names[g.Name] = true
		}
	})
	return names
}

// readBy reports whether a command whose flags come from the groups
// named in names reads g's variables that stand for no flag.
func (g *FlagGroup) readBy(names map[string]bool) bool {
	return names[g.Name] || slices.ContainsFunc(g.ReadBy, func(n string) bool { return names[n] })
}

// fromEnv runs FromEnv of every group fs binds, in order.
func fromEnv(fs *pflag.FlagSet, getenv func(string) string) error {
	names := boundNames(fs)
	for _, g := range groups.All() {
		if g.FromEnv == nil || !names[g.Name] {
			continue
		}
		if err := g.FromEnv(fs, getenv); err != nil {
			return err
		}
	}
	return nil
}
