package system

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// pySites prints a Python's site-packages directories, one a line:
// sysconfig's purelib and platlib, site's global ones, then the user's.
const pySites = `import site, sysconfig
seen = []
dirs = [sysconfig.get_paths().get(k) for k in ("purelib", "platlib")]
try:
    dirs += list(site.getsitepackages())
except Exception:
    pass
try:
    dirs.append(site.getusersitepackages())
except Exception:
    pass
for d in dirs:
    if d and d not in seen:
        seen.append(d)
        print(d)
`

// pythonTimeout bounds the Python asked for its site-packages: an
// interpreter that hangs must not hang kvtier.
const pythonTimeout = 10 * time.Second

// PythonSitePackages asks the Python interpreter at python for its
// site-packages directories (sysconfig and site), within 10 s.
func PythonSitePackages(python string) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), pythonTimeout)
	defer cancel()
	out, errb := capped{max: 64 << 10}, capped{max: 4 << 10}
	cmd := exec.CommandContext(ctx, python, "-c", pySites)
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.WaitDelay = time.Second
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(errb.String())
		if len(msg) > 200 {
			msg = msg[len(msg)-200:]
		}
		return nil, fmt.Errorf("%s: %v %s", python, err, msg)
	}
	var dirs []string
	for l := range strings.Lines(out.String()) {
		if l = strings.TrimSpace(l); filepath.IsAbs(l) {
			dirs = append(dirs, l)
		}
	}
	return dirs, nil
}

// CUBLASDirs returns where pip's cuBLAS wheels put libcublas in each of
// sites: nvidia/cublas/lib (nvidia-cublas-cu12: libcublas.so.12) and
// nvidia/cu13/lib (CUDA 13's wheels: libcublas.so.13).
func CUBLASDirs(sites []string) []string {
	var dirs []string
	for _, s := range sites {
		dirs = append(dirs, filepath.Join(s, "nvidia", "cublas", "lib"), filepath.Join(s, "nvidia", "cu13", "lib"))
	}
	return dirs
}

// capped keeps the first max bytes written to it and drops the rest, so
// an interpreter that prints without end cannot grow kvtier.
type capped struct {
	bytes.Buffer
	max int
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.Len(); room > 0 {
		c.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
