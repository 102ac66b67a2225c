package main

import (
	"context"
	"errors"
	"io"
)

// runSim is a placeholder until the sim command lands.
func runSim(ctx context.Context, stdout, stderr io.Writer, args []string) int {
	return usageErr(stderr, "sim", errors.New("not built yet"))
}
