package systems

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckJavaNamesWhatIsMissing(t *testing.T) {
	dir := t.TempDir()
	java, jar := filepath.Join(dir, "java"), filepath.Join(dir, "x.jar")
	if err := os.WriteFile(java, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		java string
		want string // in the error; "" for none
	}{
		{filepath.Join(dir, "nojava"), "hdfs: java: stat " + filepath.Join(dir, "nojava")},
		{java, "hdfs: stat " + jar + ": no such file or directory (make deps)"},
	} {
		err := CheckJava("hdfs", c.java, []string{jar}, "make deps")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("java %s: got %v, want %q", c.java, err, c.want)
		}
	}
	if err := os.WriteFile(jar, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CheckJava("hdfs", java, []string{jar}, "make deps"); err != nil {
		t.Errorf("all there: %v", err)
	}
}
