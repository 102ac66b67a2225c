package main

import (
	"context"
	"errors"
	"io"
)

// runProbe is a placeholder until the probe command lands.
func runProbe(ctx context.Context, stdout, stderr io.Writer, args []string) int {
	return usageErr(stderr, "probe", errors.New("not built yet"))
}
