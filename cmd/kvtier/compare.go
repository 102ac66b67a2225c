package main

import (
	"context"
	"errors"
	"io"
)

// runCompare is a placeholder until the compare command lands.
func runCompare(ctx context.Context, stdout, stderr io.Writer, args []string) int {
	return usageErr(stderr, "compare", errors.New("not built yet"))
}
