package main

import (
	"context"
	"errors"
	"io"
)

// runTransfer is a placeholder until the transfer command lands.
func runTransfer(ctx context.Context, stdout, stderr io.Writer, args []string) int {
	return usageErr(stderr, "transfer", errors.New("not built yet"))
}
