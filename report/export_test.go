package report

import "flag"

// UpdateGolden is the -update flag for the external tests.
var UpdateGolden = flag.Bool("update", false, "rewrite golden files")
