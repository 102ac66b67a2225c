package results

// Directions of the sweep's, transfer's and mesh's rows: which way the
// bytes moved between the engine's working pool and the tier (or peer).
const (
	// DirectionLoad brings KV back from the tier into the working pool
	// (or pulls it from the peer): every row written before the column
	// existed.
	DirectionLoad = "load"
	// DirectionStore puts KV from the working pool into the tier (or
	// pushes it into the peer).
	DirectionStore = "store"
)

// DirectionColumn is the column that holds a row's direction.
const DirectionColumn = "direction"

// Direction returns the row's direction: its direction column, or
// DirectionLoad for a row without one (results written before stores
// were measured).
func (r Row) Direction() string {
	if d := r.Get(DirectionColumn); d != "" {
		return d
	}
	return DirectionLoad
}

// IsLoad reports whether the row measured a load (or predates the
// direction column).
func (r Row) IsLoad() bool { return r.Direction() == DirectionLoad }

// Loads returns the rows of rows that measured loads, in order: what
// readers that know only loads (fits, headlines, predictions) read.
func Loads(rows []Row) []Row {
	var out []Row
	for _, r := range rows {
		if r.IsLoad() {
			out = append(out, r)
		}
	}
	return out
}
