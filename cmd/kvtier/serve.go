package main

import (
	"context"
	"errors"
	"io"
)

// runServe is a placeholder until the serve command lands.
func runServe(ctx context.Context, stdout, stderr io.Writer, args []string) int {
	return usageErr(stderr, "serve", errors.New("not built yet"))
}
