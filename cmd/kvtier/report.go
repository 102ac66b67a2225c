package main

import (
	"context"
	"errors"
	"io"
)

// runReport is a placeholder until the report command lands.
func runReport(ctx context.Context, stdout, stderr io.Writer, args []string) int {
	return usageErr(stderr, "report", errors.New("not built yet"))
}
