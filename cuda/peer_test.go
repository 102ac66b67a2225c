package cuda_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/kvtier/kvtier/cuda"
)

func TestPeerCopy(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		wantP2P bool
	}{
		{"p2p", map[string]string{"FAKECUDA_DEVICES": "2"}, true},
		{"staged", map[string]string{"FAKECUDA_DEVICES": "2", "FAKECUDA_NO_P2P": "1"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, _ := open(t, tc.env)
			can, err := d.CanAccessPeer(0, 1)
			if err != nil {
				t.Fatal(err)
			}
			if can != tc.wantP2P {
				t.Fatalf("CanAccessPeer(0, 1) = %v, want %v", can, tc.wantP2P)
			}
			c0, s0 := context(t, d)
			c1, err := d.PrimaryContext(1)
			if err != nil {
				t.Fatal(err)
			}
			defer c1.Release()
			err = c0.EnablePeerAccess(c1)
			if tc.wantP2P && err != nil {
				t.Fatalf("EnablePeerAccess: %v", err)
			}
			if !tc.wantP2P && err == nil {
				t.Fatal("EnablePeerAccess without P2P succeeded")
			}
			if tc.wantP2P {
				if err := c0.EnablePeerAccess(c1); err != nil {
					t.Fatalf("EnablePeerAccess twice: %v", err)
				}
			}
			src, err := c0.AllocDevice(8192)
			if err != nil {
				t.Fatal(err)
			}
			defer src.Free()
			dst, err := c1.AllocDevice(8192)
			if err != nil {
				t.Fatal(err)
			}
			defer dst.Free()
			want := make([]byte, 8192)
			for i := range want {
				want[i] = byte(i * 7)
			}
			if _, err := src.WriteAt(want, 0); err != nil {
				t.Fatal(err)
			}
			var p cuda.Plan
			defer p.Free()
			p.Reset(2)
			p.Add(dst.Ptr(), src.Ptr()+4096, 4096) // swap halves
			p.Add(dst.Ptr()+4096, src.Ptr(), 4096)
			if n, err := s0.CopyPeer(c1, c0, &p); err != nil || n != 2 {
				t.Fatalf("CopyPeer = %d, %v", n, err)
			}
			if err := s0.Sync(); err != nil {
				t.Fatal(err)
			}
			got := make([]byte, 8192)
			if _, err := dst.ReadAt(got, 0); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got[:4096], want[4096:]) || !bytes.Equal(got[4096:], want[:4096]) {
				t.Fatal("peer copy did not move the bytes")
			}
			// Contexts swapped: the pointers do not lie on those devices.
			if _, err := s0.CopyPeer(c0, c1, &p); err == nil {
				t.Fatal("CopyPeer with the contexts swapped succeeded")
			}
		})
	}
}

func TestPeerUnsupported(t *testing.T) {
	d, _ := open(t, map[string]string{"FAKECUDA_DEVICES": "2", "FAKECUDA_HIDE": "cuDeviceCanAccessPeer"})
	if _, err := d.CanAccessPeer(0, 1); !errors.Is(err, cuda.ErrUnsupported) {
		t.Fatalf("CanAccessPeer without the symbol: %v, want ErrUnsupported", err)
	}
	if _, err := d.CanAccessPeer(0, 2); err == nil {
		t.Fatal("CanAccessPeer of a missing device succeeded")
	}
}
