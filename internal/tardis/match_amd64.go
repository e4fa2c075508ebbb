package tardis

import "golang.org/x/sys/cpu"

// matchVector says whether matchBlocksAVX512 runs here: it needs
// AVX-512's 64-bit multiply (DQ) on 256-bit registers (VL).
var matchVector = cpu.X86.HasAVX512F && cpu.X86.HasAVX512DQ && cpu.X86.HasAVX512VL

// matchBlocks returns how many of the n whole blocks at p equal blocks b,
// b+1, ... of the stream (seed, key k), stopping at the first that does
// not. The caller keeps b+n within the stream (no wrap).
func matchBlocks(p *byte, n int, seed, k, b uint64) int {
	if !matchVector {
		return 0
	}
	return matchBlocksAVX512(p, n, seed, k, b)
}

// matchBlocksAVX512 is matchForward's loop in 256-bit registers: a
// block's words 0-3 (magic, seed, index, mix of the check input) in one,
// its payload words 4-7 (mix1 of four inputs) in another, so the five
// mixes of a block cost three vector multiplies instead of six scalar
// ones (match_amd64.s).
//
//go:noescape
func matchBlocksAVX512(p *byte, n int, seed, k, b uint64) int
