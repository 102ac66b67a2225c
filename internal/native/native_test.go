package native

import (
	"errors"
	"sync"
	"testing"
)

func TestCacheLoadsOncePerPath(t *testing.T) {
	t.Parallel()
	var c Cache[string]
	calls := map[string]int{}
	var mu sync.Mutex
	open := func(path string) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		calls[path]++
		if path == "missing.so" {
			return "", errors.New("missing.so: cannot open shared object file")
		}
		return "lib:" + path, nil
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for _, p := range []string{"", "a.so", "missing.so"} {
				v, err := c.Load(p, open)
				if p == "missing.so" {
					if err == nil || v != "" {
						t.Errorf("Load(%q) = %q, %v; want the first failure again", p, v, err)
					}
					continue
				}
				if err != nil || v != "lib:"+p {
					t.Errorf("Load(%q) = %q, %v", p, v, err)
				}
			}
		})
	}
	wg.Wait()
	for _, p := range []string{"", "a.so", "missing.so"} {
		if calls[p] != 1 {
			t.Errorf("open(%q) ran %d times, want once (failures are remembered too)", p, calls[p])
		}
	}
}
