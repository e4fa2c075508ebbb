#include "textflag.h"

// Constants of mix (splitmix64's finaliser) and mix1, and golden.
#define MIX_C1 $0xbf58476d1ce4e5b9
#define MIX_C2 $0x94d049bb133111eb
#define MIX1_C $0xd6e8feb86659fd93
#define GOLDEN $0x9e3779b97f4a7c15
#define MAGIC $0x534452545cd17a9e

// func matchBlocksAVX512(p *byte, n int, seed, k, b uint64) int
//
// Y0: words 0-3 of the current block before mixing: magic, seed, b,
//     z+3g (z = k + 8bg); Y1: mix inputs of words 4-7, z+4g .. z+7g.
// Y2: Y0's step from block to block (0, 0, 1, 8g); Y3: 8g in every lane.
// Y4, Y5, Y6: the multipliers; K3 = 0b1000 picks word 3's mixed lane.
TEXT ·matchBlocksAVX512(SB), NOSPLIT, $0-48
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), DX
	MOVQ seed+16(FP), R8
	MOVQ k+24(FP), R9
	MOVQ b+32(FP), R10
	XORQ CX, CX
	TESTQ DX, DX
	JLE done

	// z = k + b*8g; R11 = g, R12 = 8g.
	MOVQ GOLDEN, R11
	MOVQ R11, R12
	SHLQ $3, R12
	MOVQ R10, AX
	IMULQ R12, AX
	ADDQ R9, AX // AX = z

	// Y0 = [magic, seed, b, z+3g]
	MOVQ MAGIC, BX
	MOVQ BX, X0
	PINSRQ $1, R8, X0
	MOVQ R10, X7
	LEAQ (R11)(R11*2), BX // 3g
	ADDQ AX, BX
	PINSRQ $1, BX, X7
	VINSERTI128 $1, X7, Y0, Y0

	// Y1 = [z+4g, z+5g, z+6g, z+7g]
	MOVQ R11, BX
	SHLQ $2, BX
	ADDQ AX, BX // z+4g
	MOVQ BX, X1
	ADDQ R11, BX
	PINSRQ $1, BX, X1
	ADDQ R11, BX
	MOVQ BX, X7
	ADDQ R11, BX
	PINSRQ $1, BX, X7
	VINSERTI128 $1, X7, Y1, Y1

	// Y2 = [0, 0, 1, 8g], Y3 = 8g x4
	VPXOR X2, X2, X2
	MOVQ $1, BX
	MOVQ BX, X7
	PINSRQ $1, R12, X7
	VINSERTI128 $1, X7, Y2, Y2
	MOVQ R12, X3
	VPBROADCASTQ X3, Y3

	MOVQ MIX_C1, BX
	MOVQ BX, X4
	VPBROADCASTQ X4, Y4
	MOVQ MIX_C2, BX
	MOVQ BX, X5
	VPBROADCASTQ X5, Y5
	MOVQ MIX1_C, BX
	MOVQ BX, X6
	VPBROADCASTQ X6, Y6

	MOVQ $8, BX
	KMOVB BX, K3

loop:
	// Y7 = mix(Y0) in every lane; Y8 = words 0-3 expected.
	VPSRLQ $30, Y0, Y7
	VPXORQ Y0, Y7, Y7
	VPMULLQ Y4, Y7, Y7
	VPSRLQ $27, Y7, Y9
	VPXORQ Y7, Y9, Y7
	VPMULLQ Y5, Y7, Y7
	VPSRLQ $31, Y7, Y9
	VPXORQ Y7, Y9, Y7
	VPBLENDMQ Y7, Y0, K3, Y8

	// Y10 = mix1(Y1): words 4-7 expected.
	VPSRLQ $32, Y1, Y10
	VPXORQ Y1, Y10, Y10
	VPMULLQ Y6, Y10, Y10
	VPSRLQ $32, Y10, Y11
	VPXORQ Y10, Y11, Y10

	VPCMPEQQ (SI), Y8, K1
	VPCMPEQQ 32(SI), Y10, K2
	KANDB K2, K1, K1
	KMOVB K1, BX
	CMPB BX, $0x0f
	JNE done

	VPADDQ Y2, Y0, Y0
	VPADDQ Y3, Y1, Y1
	ADDQ $64, SI
	INCQ CX
	CMPQ CX, DX
	JLT loop

done:
	VZEROUPPER
	MOVQ CX, ret+40(FP)
	RET
