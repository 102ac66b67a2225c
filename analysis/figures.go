package analysis

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/kvtier/kvtier/internal/regfile"
	"github.com/kvtier/kvtier/results"
)

// A Figure is one plot of a results directory as the plots package lists
// it in plots/index.json: what the report's figure index and REPORT.html
// show.
type Figure struct {
	Name  string   `json:"name"`  // file name without extension, e.g. "sweep_tiers"
	Suite string   `json:"suite"` // the suite whose rows it draws
	Title string   `json:"title"` // first line of the figure's title
	Kinds []string `json:"kinds"` // Measured, StandIn, Simulated, Predicted, Reference
	Files []string `json:"files"` // its files in the plots folder: NAME.png, NAME.svg
	// Dir is the plots folder the files are in; Load sets it.
	Dir string `json:"-"`
}

// PlotsDir is the folder of a results directory that holds its figures,
// and FigureIndex the file listing them.
const (
	PlotsDir    = "plots"
	FigureIndex = "index.json"
)

// File returns the path of the figure's file with extension ext ("svg",
// "png"), "" when it has none.
func (f Figure) File(ext string) string {
	for _, name := range f.Files {
		if filepath.Ext(name) == "."+ext {
			return filepath.Join(f.Dir, name)
		}
	}
	return ""
}

// WriteFigures writes the index of the figures in plotsDir, replacing the
// one there.
func WriteFigures(plotsDir string, figs []Figure) error {
	if figs == nil {
		figs = []Figure{}
	}
	b, err := json.MarshalIndent(figs, "", "  ")
	if err != nil {
		return fmt.Errorf("figure index: %w", err)
	}
	path := filepath.Join(plotsDir, FigureIndex)
	if err := results.WriteBytes(path, append(b, '\n')); err != nil {
		return fmt.Errorf("figure index: %w", err)
	}
	return nil
}

// maxIndexBytes bounds the figure index a reader loads.
const maxIndexBytes = 4 << 20

// loadFigures reads DIR/plots/index.json into r.Figures; an absent index
// leaves none, an unreadable one is a warning.
func (r *Run) loadFigures() {
	dir := filepath.Join(r.Dir, PlotsDir)
	path := filepath.Join(dir, FigureIndex)
	b, err := regfile.Read(path, maxIndexBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	var figs []Figure
	if err == nil {
		err = json.Unmarshal(b, &figs)
	}
	if err != nil {
		r.Warnings = append(r.Warnings, fmt.Sprintf("%s unreadable, its figures are not listed: %v", path, UnwrapPath(err)))
		return
	}
	for i := range figs {
		figs[i].Dir = dir
	}
	r.Figures = figs
}
