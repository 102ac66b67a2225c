package units

import (
	"math"
	"testing"
)

func TestParseTokens(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    int
		wantErr bool
	}{
		{"1024", 1024, false},
		{"1k", 1024, false},
		{"8K", 8192, false},
		{"64Ki", 65536, false},
		{"0.5k", 512, false},
		{"1m", 1 << 20, false},
		{" 2k ", 2048, false},
		{"0", 0, true},
		{"-1k", 0, true},
		{"", 0, true},
		{"12x", 0, true},
		{"1.3", 0, true},
		{"k", 0, true},
		{"NaN", 0, true},
	}
	for _, tt := range tests {
		got, err := ParseTokens(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseTokens(%q) = %d, %v; want %d, err=%v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestParseBytes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    int64
		wantErr bool
	}{
		{"4096", 4096, false},
		{"16KiB", 16 << 10, false},
		{"16MiB", 16 << 20, false},
		{"16M", 16 << 20, false},
		{"1.5GB", 1_500_000_000, false},
		{"11.5GiB", 11.5 * (1 << 30), false},
		{"2TB", 2e12, false},
		{"10b", 10, false},
		{"1.45TiB", 1594291860275, false},
		{"1.0001KiB", 1024, false},
		{"1.5KiB", 1536, false},
		{"0", 0, true},
		{"-4KiB", 0, true},
		{"1.5", 0, true},
		{"MiB", 0, true},
		{"12 parsecs", 0, true},
	}
	for _, tt := range tests {
		got, err := ParseBytes(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d, err=%v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestBlocks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		bytes, block, want int64
		note               string
	}{
		{4096, 1024, 4, ""},
		// The rounded size is shown precisely enough to differ from the
		// given one: to two decimals, or in bytes.
		{4097, 1024, 4, "4 KiB is not a whole number of 1 KiB blocks: rounded down to 4 blocks, 4,096 B"},
		{512 << 30, 48 << 20, 10922, "512 GiB is not a whole number of 48 MiB blocks: rounded down to 10,922 blocks, 511.97 GiB"},
		{1594291860275, 1572864, 1013623, "1.45 TiB is not a whole number of 1.5 MiB blocks: rounded down to 1,013,623 blocks, 1.449999 TiB"},
		{100, 0, 0, ""},
	}
	for _, tt := range tests {
		got, note := Blocks(tt.bytes, tt.block)
		if got != tt.want || note != tt.note {
			t.Errorf("Blocks(%d, %d) = %d, %q; want %d, %q", tt.bytes, tt.block, got, note, tt.want, tt.note)
		}
	}
}

func TestParseList(t *testing.T) {
	t.Parallel()
	got, err := ParseList("1k,4k,16k", ParseTokens)
	if err != nil || len(got) != 3 || got[0] != 1024 || got[2] != 16384 {
		t.Fatalf("ParseList = %v, %v", got, err)
	}
	for _, bad := range []string{"", "1k,,2k", "1k,zz"} {
		if _, err := ParseList(bad, ParseTokens); err == nil {
			t.Errorf("ParseList(%q) accepted", bad)
		}
	}
}

func TestFormat(t *testing.T) {
	t.Parallel()
	for in, want := range map[int64]string{512: "512 B", 16384: "16 KiB", 1572864: "1.5 MiB", 12348030976: "11.5 GiB"} {
		if got := FormatBytes(in); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", in, got, want)
		}
	}
	if FormatTokens(8192) != "8k" || FormatTokens(1000) != "1,000" || FormatTokens(int64(65536)) != "64k" {
		t.Errorf("FormatTokens wrong")
	}
	for in, want := range map[float64]string{1023.9 * 1024: "1,024 KiB", 0.5: "0 B", 3 * 1024 * 1024 * 1024 * 1024 * 1024: "3,072 TiB"} {
		if got := FormatBytes(in); got != want {
			t.Errorf("FormatBytes(%g) = %q, want %q", in, got, want)
		}
	}
}

func TestFormatSeconds(t *testing.T) {
	t.Parallel()
	tests := map[float64]string{
		0:           "0 s",
		4.2e-10:     "0.420 ns",
		3.5e-7:      "350 ns",
		1.234e-5:    "12.3 µs",
		0.0427:      "42.7 ms",
		-0.0427:     "-42.7 ms",
		0.999:       "999 ms",
		1:           "1.00 s",
		6.28:        "6.28 s",
		1234.5:      "1,235 s",
		0.9996:      "1.00 s",
		9.996e-4:    "1.00 ms",
		9.996:       "10.0 s",
		99.96:       "100 s",
		1580:        "1,580 s",
		1e308:       "1e+308 s", // a corrupt CSV's: not -9,223,372,036,854,775,808 s
		-1e19:       "-1e+19 s",
		math.NaN():  "",
		math.Inf(1): "",
	}
	for in, want := range tests {
		if got := FormatSeconds(in); got != want {
			t.Errorf("FormatSeconds(%g) = %q, want %q", in, got, want)
		}
	}
}

func TestCount(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		n    int
		want string
	}{{0, "0 rows are errors"}, {1, "1 row is an error"}, {2, "2 rows are errors"}, {-1, "-1 rows are errors"}} {
		if got := Count(c.n, "row is an error", "rows are errors"); got != c.want {
			t.Errorf("Count(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}
