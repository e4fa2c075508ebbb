//go:build !amd64

package tardis

// matchVector is false where no vector loop is written.
var matchVector = false

// matchBlocks matches no block: matchForward's Go loop does them all.
func matchBlocks(p *byte, n int, seed, k, b uint64) int { return 0 }
