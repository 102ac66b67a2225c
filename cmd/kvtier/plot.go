package main

import (
	"context"
	"errors"
	"io"
)

// runPlot is a placeholder until the plot command lands.
func runPlot(ctx context.Context, stdout, stderr io.Writer, args []string) int {
	return usageErr(stderr, "plot", errors.New("not built yet"))
}
