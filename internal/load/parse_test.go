package load

import (
	"strings"
	"testing"
)

func TestParseSize(t *testing.T) {
	good := map[string]int64{"64B": 64, "1KiB": 1024, "16KiB": 16384, "4096": 4096, "2MiB": 2 << 20, "1kB": 1000, "0B": 0, " 3 KiB ": 3072}
	for in, want := range good {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "KiB", "1.5KiB", "-1B", "1kib", "1 KB B", "12XB", "99999999999GiB"} {
		if _, err := ParseSize(in); err == nil || !strings.Contains(err.Error(), "size") {
			t.Errorf("ParseSize(%q): err %v, want an error naming the size", in, err)
		}
	}
	for _, n := range []int64{64, 1024, 16384, 1500, 3 << 20} {
		if got, _ := ParseSize(FormatSize(n)); got != n {
			t.Errorf("FormatSize(%d) = %s reads back as %d", n, FormatSize(n), got)
		}
	}
}

func TestParseRate(t *testing.T) {
	good := map[string]Rate{"2000/s": {PerSecond: 2000}, "0.5/s": {PerSecond: 0.5}, "50%": {Share: 0.5}, "100%": {Share: 1}}
	for in, want := range good {
		if got, err := ParseRate(in); err != nil || got != want {
			t.Errorf("ParseRate(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "2000", "0/s", "-5/s", "x/s", "0%", "101%", "50 percent", "inf/s", "NaN%"} {
		if _, err := ParseRate(in); err == nil {
			t.Errorf("ParseRate(%q): no error", in)
		}
	}
}

func TestParseMix(t *testing.T) {
	m, err := ParseMix("get:50, set:30,del", testOps)
	if err != nil || m.String() != "get:50,set:30,del:1" || m[1].Kind != 1 || m[2].Kind != 2 {
		t.Fatalf("ParseMix = %v (%+v), %v", m, m, err)
	}
	for _, in := range []string{"", "put:1", "get:0", "get:-1", "get:x", "get:1,get:2", "get:"} {
		if _, err := ParseMix(in, testOps); err == nil || !strings.Contains(err.Error(), "mix") {
			t.Errorf("ParseMix(%q): err %v", in, err)
		}
	}
}

func TestParseKeyDist(t *testing.T) {
	for in, want := range map[string]KeyDist{"uniform": {}, "zipf": {Zipf: true, S: DefaultZipfS}, "zipf:1.5": {Zipf: true, S: 1.5}} {
		if got, err := ParseKeyDist(in); err != nil || got != want {
			t.Errorf("ParseKeyDist(%q) = %v, %v", in, got, err)
		}
	}
	for _, in := range []string{"", "normal", "zipf:1", "zipf:0.99", "zipf:x"} {
		if _, err := ParseKeyDist(in); err == nil {
			t.Errorf("ParseKeyDist(%q): no error", in)
		}
	}
}
