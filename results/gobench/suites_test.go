package gobench

// The sweep's and the transfer's suites register themselves from their
// own packages; the parser's tests need their columns, as bench2csv has
// them in the kvtier binary.
import (
	_ "github.com/kvtier/kvtier/harness/sweep"
	_ "github.com/kvtier/kvtier/harness/transfer"
)
