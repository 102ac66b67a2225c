// Package layers holds no code: its test checks the rules of kvtier's
// layering (docs/design.md) against what the packages import, so that a
// change that breaks one fails `make test` instead of a review.
package layers
