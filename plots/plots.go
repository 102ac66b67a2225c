// Package plots draws kvtier's figures (PNG and SVG) from the CSV files of
// a results directory alone.
package plots

import "errors"

// Dir draws every plot the CSV files in dir allow and returns the paths it
// wrote.
func Dir(dir string) ([]string, error) {
	return nil, errors.New("plots: not built yet")
}
