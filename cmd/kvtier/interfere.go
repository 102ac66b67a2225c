package main

import (
	"context"
	"errors"
	"io"
)

// runInterfere is a placeholder until the interfere command lands.
func runInterfere(ctx context.Context, stdout, stderr io.Writer, args []string) int {
	return usageErr(stderr, "interfere", errors.New("not built yet"))
}
