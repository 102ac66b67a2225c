package main

import (
	"context"
	"errors"
	"io"
)

// runGeometry is a placeholder until the geometry command lands.
func runGeometry(ctx context.Context, stdout, stderr io.Writer, args []string) int {
	return usageErr(stderr, "geometry", errors.New("not built yet"))
}
