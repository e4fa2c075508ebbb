// Command gait makes limping hardware visible and survivable in distributed
// systems. See README.md and docs/ for what each subcommand does.
package main

import (
	"os"

	"github.com/gait-dev/gait/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:]))
}
