package clip

import (
	"strings"
	"testing"
)

func TestQuote(t *testing.T) {
	if got := Quote("a\nb"); got != `"a\nb"` {
		t.Errorf("short: %s", got)
	}
	long := strings.Repeat("x", 1<<20)
	got := Quote([]byte(long))
	if want := `"` + long[:Max] + `"... (1048576 bytes)`; got != want {
		t.Errorf("long: %s", got)
	}
}
