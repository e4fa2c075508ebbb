package systems

import (
	"fmt"
	"os"
	"path/filepath"
)

// CheckJava says what is missing to run a Java system: the java binary,
// then each file its class path needs; install tells the user how to get
// those files ("run scripts/fetch-jars.sh hadoop, or make deps").
func CheckJava(system, java string, files []string, install string) error {
	if _, err := os.Stat(java); err != nil {
		return fmt.Errorf("%s: java: %w (install Debian's default-jre-headless)", system, err)
	}
	for _, f := range files {
		if _, err := os.Stat(f); err != nil {
			return fmt.Errorf("%s: %w (%s)", system, err, install)
		}
	}
	return nil
}

// JavaTmpDir is where a JVM gait starts for a member whose directory is
// dir keeps its temporary files. Left to itself a JVM writes them to the
// machine's /tmp: Jetty's work directory for each daemon's HTTP server
// (HDFS, YARN, HBase) and native libraries unpacked from jars
// (Cassandra's lz4), and a JVM stopped with a signal never removes them.
// In dir they go when the member's directory does.
func JavaTmpDir(dir string) string { return filepath.Join(dir, "java-tmp") }

// JavaTmpFlag is the JVM flag that puts the temporary files in
// JavaTmpDir(dir), which must exist: make it with the member's
// configuration.
func JavaTmpFlag(dir string) string { return "-Djava.io.tmpdir=" + JavaTmpDir(dir) }
