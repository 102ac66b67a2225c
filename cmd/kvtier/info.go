package main

import (
	"context"
	"errors"
	"io"
)

// runInfo is a placeholder until the info command lands.
func runInfo(ctx context.Context, stdout, stderr io.Writer, args []string) int {
	return usageErr(stderr, "info", errors.New("not built yet"))
}
