package cli

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/kvtier/kvtier/option"
	"github.com/kvtier/kvtier/units"
)

// TokenCount parses a token count flag that may be 0 ("0", "2k"). A
// value that does not parse adds an option.Error to errs and yields
// fallback, a valid placeholder, so that the options' Validate does not
// report it again.
func TokenCount(errs *[]error, name, v string, fallback int) int {
	if strings.TrimSpace(v) == "0" {
		return 0
	}
	n, err := units.ParseTokens(v)
	if err != nil {
		*errs = append(*errs, option.Wrap(name, err))
		return fallback
	}
	return n
}

// Atoi parses one integer of a list flag (ListFlag).
func Atoi(s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("%q is not an integer", s)
	}
	return n, nil
}

// TokensFlag parses an optional token count ("" or "0": none, "400k");
// a value that does not parse adds an option.Error to errs.
func TokensFlag(errs *[]error, name, value string) int {
	if strings.TrimSpace(value) == "" {
		return 0
	}
	n, err := units.ParseTokens(value)
	if err != nil {
		*errs = append(*errs, option.Wrap(name, err))
		return 0
	}
	return n
}
