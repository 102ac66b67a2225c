package main

import (
	"context"
	"errors"
	"io"
)

// runBench2CSV is a placeholder until the bench2csv command lands.
func runBench2CSV(ctx context.Context, stdout, stderr io.Writer, args []string) int {
	return usageErr(stderr, "bench2csv", errors.New("not built yet"))
}
