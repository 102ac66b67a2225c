package plots_test

// The suites whose files the tests write through reporttest register
// their files and columns here.
import (
	_ "github.com/kvtier/kvtier/harness/mb1"
	_ "github.com/kvtier/kvtier/harness/mesh"
	_ "github.com/kvtier/kvtier/harness/probe"
	_ "github.com/kvtier/kvtier/harness/sweep"
	_ "github.com/kvtier/kvtier/harness/trace"
	_ "github.com/kvtier/kvtier/harness/transfer"
)
