package results

// A Figure is a figure a suite declares rather than draws: for each
// configuration of Series, a line of the p50 (and p10–p90 band) of File's
// measurement against the column X. Package plots draws the declared
// figures of every registered suite beside those its own drawers draw,
// so a suite gets figures from its declaration alone.
type Figure struct {
	Name   string   // the files' name under plots/, without extension: "toy_latency"
	Title  string   // what the figure shows
	File   string   // the suite's file it reads; "" for the main file
	X      string   // the numeric column along the x axis
	Series []string // the columns that tell its lines apart
	LogX   bool     // a log2 x axis (sizes, prefix lengths)
}
