package systems

import (
	"fmt"
	"os"
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
