package report

import (
	"bytes"
	"fmt"
	"html"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"

	"github.com/kvtier/kvtier/analysis"
	"github.com/kvtier/kvtier/internal/regfile"
)

// maxSVGBytes bounds a figure REPORT.html inlines; a larger one is
// linked instead.
const maxSVGBytes = 8 << 20

// HTML renders the report of runs as one self-contained HTML page: the
// Markdown report's text and tables, each figure inlined as SVG after its
// section, tables that sort on a click on their heading (a few lines of
// plain script), and no resource loaded from anywhere, so that it opens
// from a file:// URL.
func HTML(w io.Writer, runs []*analysis.Run, o Options) error {
	l := layOut(runs)
	l.hideHome(o.Home)
	md := goldmark.New(goldmark.WithExtensions(extension.Table), goldmark.WithParserOptions(parser.WithAutoHeadingID()))
	ids := &headingIDs{seen: map[string]int{}}
	var b bytes.Buffer
	b.WriteString(htmlHead)
	for _, p := range l.parts {
		src := p.md
		if p.index {
			var ib strings.Builder
			writeIndex(&ib, l.figures, func(f analysis.Figure) string { return "#" + figureID(f) })
			src += ib.String()
		}
		ctx := parser.NewContext(parser.WithIDs(ids))
		if err := md.Convert([]byte(src), &b, parser.WithContext(ctx)); err != nil {
			return fmt.Errorf("report: html: %w", err)
		}
		for _, f := range p.figures {
			writeFigureHTML(&b, f, o)
		}
	}
	b.WriteString(htmlTail)
	_, err := w.Write(b.Bytes())
	return err
}

// figureID is the id of a figure's element in REPORT.html: the name of
// its results directory and its own, "fig-sweep-sweep_tiers".
func figureID(f analysis.Figure) string {
	return "fig-" + anchor(filepath.Base(filepath.Dir(f.Dir))+" "+f.Name)
}

// writeFigureHTML writes a figure: its SVG inline, its title and what it
// shows as the caption. A figure whose SVG cannot be read says so.
func writeFigureHTML(w *bytes.Buffer, f analysis.Figure, o Options) {
	fmt.Fprintf(w, "<figure id=\"%s\">\n", figureID(f))
	svg, err := readSVG(f.File("svg"))
	if err != nil {
		fmt.Fprintf(w, "<p class=\"missing\">figure not inlined: %s</p>\n", html.EscapeString(err.Error()))
	} else {
		w.Write(svg)
	}
	fmt.Fprintf(w, "\n<figcaption>%s <span class=\"kind\">(%s)</span> · <a href=\"%s\">PNG</a></figcaption>\n</figure>\n",
		html.EscapeString(f.Title), html.EscapeString(analysis.KindLabel(f.Kinds)), html.EscapeString(o.link(f.File("png"))))
}

// readSVG returns the <svg> element of an SVG file, without the XML
// prolog an inline SVG must not have.
func readSVG(path string) ([]byte, error) {
	if path == "" {
		return nil, fmt.Errorf("no SVG file")
	}
	b, err := regfile.Read(path, maxSVGBytes)
	if err != nil {
		return nil, analysis.UnwrapPath(err)
	}
	i := bytes.Index(b, []byte("<svg"))
	if i < 0 {
		return nil, fmt.Errorf("%s: no <svg> element", path)
	}
	return b[i:], nil
}

// headingIDs gives headings the ids anchor gives them in Markdown, a
// repeated one "-1", "-2", ... as GitHub does.
type headingIDs struct{ seen map[string]int }

func (h *headingIDs) Generate(value []byte, _ ast.NodeKind) []byte {
	id := anchor(string(value))
	n, dup := h.seen[id]
	h.seen[id] = n + 1
	if dup {
		id += "-" + strconv.Itoa(n)
	}
	return []byte(id)
}

func (h *headingIDs) Put(value []byte) { h.seen[string(value)]++ }

const htmlHead = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>kvtier report</title>
<style>
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1b1b1b; margin: 0; background: #fff; }
main { max-width: 1180px; margin: 0 auto; padding: 16px 24px 48px; }
h1 { font-size: 24px; margin: 8px 0 4px; }
h2 { font-size: 19px; margin: 28px 0 8px; padding-top: 8px; border-top: 1px solid #ddd; }
h3, h4 { font-size: 15px; margin: 18px 0 6px; }
table { border-collapse: collapse; margin: 8px 0 12px; display: block; overflow-x: auto; font-variant-numeric: tabular-nums; }
th, td { border: 1px solid #d4d4d4; padding: 3px 8px; white-space: nowrap; }
td:has(code) { white-space: normal; min-width: 22em; }
th { background: #f3f3f3; cursor: pointer; user-select: none; }
th[data-dir="asc"]::after { content: " ▲"; } th[data-dir="desc"]::after { content: " ▼"; }
tr:nth-child(even) td { background: #fafafa; }
code { font-size: 12px; background: #f3f3f3; padding: 0 3px; white-space: pre-wrap; word-break: break-all; }
figure { margin: 12px 0 20px; display: inline-block; width: 560px; max-width: 100%; vertical-align: top; }
figure svg { width: 100%; height: auto; border: 1px solid #e4e4e4; }
figcaption { font-size: 12px; color: #444; }
.kind { color: #8a4b00; }
.missing { color: #b00020; }
</style>
</head>
<body>
<main>
`

// htmlTail closes the page with its one script: a click on a table's
// heading sorts its rows by that column, numbers (with their units) as
// numbers.
const htmlTail = `</main>
<script>
(function () {
  var scale = { ns: 1e-9, "µs": 1e-6, ms: 1e-3, s: 1, B: 1, KiB: 1024, MiB: 1048576, GiB: 1073741824, TiB: 1099511627776, k: 1024, M: 1048576 };
  function key(cell) {
    var s = cell ? cell.textContent.trim() : "";
    var m = /^(-?[\d,]*\.?\d+(?:e[-+]?\d+)?)\s*(ns|µs|ms|s|B|KiB|MiB|GiB|TiB|k|M)?\b/.exec(s);
    return m ? parseFloat(m[1].replace(/,/g, "")) * (scale[m[2]] || 1) : s;
  }
  document.querySelectorAll("table").forEach(function (t) {
    t.querySelectorAll("thead th").forEach(function (th, i) {
      th.title = "sort by this column";
      th.addEventListener("click", function () {
        var dir = th.dataset.dir === "asc" ? "desc" : "asc";
        t.querySelectorAll("thead th").forEach(function (o) { delete o.dataset.dir; });
        th.dataset.dir = dir;
        var body = t.tBodies[0], rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = key(a.cells[i]), y = key(b.cells[i]);
          var c = typeof x === typeof y ? (x < y ? -1 : x > y ? 1 : 0) : (typeof x === "number" ? -1 : 1);
          return dir === "asc" ? c : -c;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  });
  document.querySelectorAll("figure").forEach(function (f) {
    var r = f.getBoundingClientRect();
    f.dataset.rendered = Math.round(r.width) + "x" + Math.round(r.height);
  });
})();
</script>
</body>
</html>
`
