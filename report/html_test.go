package report_test

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvtier/kvtier/analysis"
	"github.com/kvtier/kvtier/report"
)

// htmlPage renders the drawn tree's report as HTML into
// root/REPORT.html, once for the tests that read it.
func htmlPage(t *testing.T) (string, []*analysis.Run, string) {
	t.Helper()
	root, runs := benchTree(t, true)
	p := page()
	if p.err != nil {
		t.Fatal(p.err)
	}
	return filepath.Join(root, "REPORT.html"), runs, p.text
}

var page = sync.OnceValue(func() (p struct {
	text string
	err  error
}) {
	d := drawn()
	if p.err = d.err; p.err != nil {
		return p
	}
	var b bytes.Buffer
	if p.err = report.HTML(&b, d.runs, report.Options{Base: d.root}); p.err != nil {
		return p
	}
	p.text = b.String()
	p.err = os.WriteFile(filepath.Join(d.root, "REPORT.html"), b.Bytes(), 0o644)
	return p
})

// TestHTMLSelfContained: the page loads nothing from anywhere (no
// stylesheet, image or script by URL, no remote link), inlines every
// figure as SVG and holds the headline and every section of the
// Markdown report.
func TestHTMLSelfContained(t *testing.T) {
	t.Parallel()
	_, runs, page := htmlPage(t)
	for _, bad := range []*regexp.Regexp{
		regexp.MustCompile(`<(link|img|iframe|object|embed)\b`), regexp.MustCompile(`<script[^>]*\bsrc=`),
		regexp.MustCompile(`(?i)(src|href)="(https?:)?//`), regexp.MustCompile(`(?i)url\(\s*['"]?(https?:)?//`), regexp.MustCompile(`@import`),
	} {
		if m := bad.FindString(page); m != "" {
			t.Errorf("the page loads something: %q", m)
		}
	}
	n := 0
	for _, r := range runs {
		for _, f := range r.Figures {
			n++
			id := regexp.MustCompile(`<figure id="(fig-` + filepath.Base(r.Dir) + `-` + regexp.QuoteMeta(strings.ToLower(f.Name)) + `)">\s*<svg `).FindStringSubmatch(page)
			if id == nil {
				t.Errorf("figure %s is not inlined as SVG", f.Name)
			} else if !strings.Contains(page, `href="#`+id[1]+`"`) {
				t.Errorf("figure %s: the index does not link to #%s", f.Name, id[1])
			}
		}
	}
	if got := strings.Count(page, "<svg "); got != n {
		t.Errorf("%d inline SVGs, want one per figure (%d)", got, n)
	}
	md := markdown(runs, "")
	for line := range strings.SplitSeq(md, "\n") {
		if h, ok := strings.CutPrefix(line, "## "); ok && !strings.Contains(page, `<h2 id="`+anchorOf(h)+`">`) {
			t.Errorf("the page has no heading %q with id %q", h, anchorOf(h))
		}
	}
	if strings.Contains(page, "<?xml") {
		t.Error("an SVG's XML prolog is left inside the page")
	}
}

// chromium returns Debian's Chromium, or skips the test saying why.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("chromium not found on PATH: the page is not rendered (Debian: apt-get install chromium; make test installs it as root)")
	return ""
}

// TestHTMLInChromium renders REPORT.html from a file:// URL in headless
// Chromium, once: the screenshot is not one colour, the headline table
// is there, and every figure is laid out at a visible size with its
// drawing.
func TestHTMLInChromium(t *testing.T) {
	t.Parallel()
	chrome := chromium(t)
	page, runs, _ := htmlPage(t)
	shot := filepath.Join(t.TempDir(), "screenshot.png")
	home := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, chrome, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--user-data-dir="+filepath.Join(home, "profile"),
		"--window-size=1280,1600", "--screenshot="+shot, "--dump-dom", "file://"+page)
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+home, "XDG_CACHE_HOME="+home)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, tail(stderr.String(), 2000))
	}
	dom := string(out)
	if p := os.Getenv("KVTIER_REPORT_SCREENSHOT"); p != "" { // the README's picture: go test -run Chromium
		if b, err := os.ReadFile(shot); err == nil {
			os.WriteFile(p, b, 0o644)
		}
	}
	checkScreenshot(t, shot)
	head := regexp.MustCompile(`(?s)<h2 id="headline">.*?<h2 `).FindString(dom)
	if !strings.Contains(head, "<table>") || !regexp.MustCompile(`<th[^>]*>hbm</th>`).MatchString(head) || !regexp.MustCompile(`<td[^>]*>64k</td>`).MatchString(head) {
		t.Errorf("the rendered page has no headline tier table:\n%s", tail(head, 3000))
	}
	figs := regexp.MustCompile(`(?s)<figure id="[^"]*" data-rendered="(\d+)x(\d+)">(.*?)</figure>`).FindAllStringSubmatch(dom, -1)
	want := 0
	for _, r := range runs {
		want += len(r.Figures)
	}
	if len(figs) != want {
		t.Errorf("%d figures rendered, want %d", len(figs), want)
	}
	for _, f := range figs {
		w, _ := strconv.Atoi(f[1])
		h, _ := strconv.Atoi(f[2])
		caption := regexp.MustCompile(`(?s)<figcaption>(.*?)</figcaption>`).FindStringSubmatch(f[3])
		if w < 200 || h < 150 {
			t.Errorf("figure %q laid out at %dx%d px, not visible", caption, w, h)
		}
		if strings.Count(f[3], "<path") < 20 || strings.Count(f[3], "<text") < 5 {
			t.Errorf("figure %q has %d paths and %d texts: blank", caption, strings.Count(f[3], "<path"), strings.Count(f[3], "<text"))
		}
	}
}

// checkScreenshot fails unless the screenshot is a picture with more
// than a handful of colours: a page that rendered, not a blank one.
func checkScreenshot(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if n := colours(img, 64); n < 16 {
		t.Errorf("the screenshot has %d colours: blank", n)
	}
}

// colours counts the distinct colours of img, up to limit.
func colours(img image.Image, limit int) int {
	seen := map[[4]uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 3 {
		for x := b.Min.X; x < b.Max.X; x += 3 {
			r, g, bl, a := img.At(x, y).RGBA()
			seen[[4]uint32{r >> 8, g >> 8, bl >> 8, a >> 8}] = true
			if len(seen) >= limit {
				return len(seen)
			}
		}
	}
	return len(seen)
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
