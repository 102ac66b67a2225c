package main

import (
	"context"
	"errors"
	"io"
)

// runSweep is a placeholder until the sweep command lands.
func runSweep(ctx context.Context, stdout, stderr io.Writer, args []string) int {
	return usageErr(stderr, "sweep", errors.New("not built yet"))
}
