package report

// UpdateGolden is the -update flag for the external tests.
var UpdateGolden = update
