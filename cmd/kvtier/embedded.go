package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kvtier/kvtier/serving"
	"github.com/kvtier/kvtier/vllmsim"
)

// secondEndpoint is a server a command talks to besides --base-url: its
// flag, what it is (said when --sim makes it redundant) and its URL.
type secondEndpoint struct{ flag, role, url string }

// endpointURL checks --base-url, --sim and a second server's flag
// together, adding each problem to errs, and returns the endpoint to
// use: "sim" with --sim (replaced by the sim's URL once it runs).
func (f *serverFlags) endpointURL(errs *[]error, second secondEndpoint) string {
	endpoint := strings.TrimSpace(f.baseURL)
	switch {
	case f.useSim:
		if flagChanged(f.fs, "base-url") {
			*errs = append(*errs, errors.New("--sim and --base-url exclude each other"))
		}
		if second.url != "" {
			*errs = append(*errs, fmt.Errorf("--sim starts its own %s: drop --%s", second.role, second.flag))
		}
		endpoint = "sim"
	case endpoint == "":
		*errs = append(*errs, errors.New("--base-url URL is required (or KVTIER_ENDPOINT, or --sim)"))
	default:
		if _, err := serving.NewClient(endpoint, time.Second); err != nil {
			*errs = append(*errs, fmt.Errorf("--base-url: %w", err))
		}
	}
	if second.url != "" {
		if _, err := serving.NewClient(second.url, time.Second); err != nil {
			*errs = append(*errs, fmt.Errorf("--%s: %w", second.flag, err))
		}
	}
	return endpoint
}

// simFleet is the embedded sims one command starts, closed together.
type simFleet []*vllmsim.Server

// start starts a sim on a free loopback port and returns its URL.
func (f *simFleet) start(ctx context.Context, c vllmsim.Config) (string, error) {
	s, err := vllmsim.New(c)
	if err != nil {
		return "", err
	}
	*f = append(*f, s)
	return s.Start(ctx, "127.0.0.1:0")
}

// close closes every sim started.
func (f *simFleet) close() {
	for _, s := range *f {
		s.Close()
	}
}
