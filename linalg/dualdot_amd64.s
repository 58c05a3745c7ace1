//go:build !purego

#include "textflag.h"

// func dotAVX2(a, b []float64) float64
//
// sum a_t b_t over len(a) entries, with four four-lane accumulators.
TEXT ·dotAVX2(SB), NOSPLIT, $0-56
	MOVQ   a_base+0(FP), SI
	MOVQ   a_len+8(FP), CX
	MOVQ   b_base+24(FP), R8
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	XORQ   AX, AX
	MOVQ   CX, DX
	ANDQ   $~15, DX
	JZ     dtail4

dloop16:
	VMOVUPD     (SI)(AX*8), Y4
	VMOVUPD     32(SI)(AX*8), Y5
	VMOVUPD     64(SI)(AX*8), Y6
	VMOVUPD     96(SI)(AX*8), Y7
	VFMADD231PD (R8)(AX*8), Y4, Y0
	VFMADD231PD 32(R8)(AX*8), Y5, Y1
	VFMADD231PD 64(R8)(AX*8), Y6, Y2
	VFMADD231PD 96(R8)(AX*8), Y7, Y3
	ADDQ        $16, AX
	CMPQ        AX, DX
	JLT         dloop16

dtail4:
	MOVQ        CX, DX
	SUBQ        AX, DX
	CMPQ        DX, $4
	JLT         dreduce
	VMOVUPD     (SI)(AX*8), Y4
	VFMADD231PD (R8)(AX*8), Y4, Y0
	ADDQ        $4, AX
	JMP         dtail4

dreduce:
	VADDPD       Y1, Y0, Y0
	VADDPD       Y3, Y2, Y2
	VADDPD       Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPD       X1, X0, X0
	VHADDPD      X0, X0, X0
	CMPQ         AX, CX
	JGE          ddone

dloop1:
	VMOVSD      (SI)(AX*8), X4
	VFMADD231SD (R8)(AX*8), X4, X0
	INCQ        AX
	CMPQ        AX, CX
	JLT         dloop1

ddone:
	VZEROUPPER
	MOVSD X0, ret+48(FP)
	RET

// func dualDotAVX2(a, da, b, db []float64) (s, ds float64)
//
// s = sum a_t b_t and ds = sum (da_t b_t + a_t db_t) over len(a) entries,
// with fused multiply-adds on two pairs of four-lane accumulators (Y0, Y1
// for s, Y2, Y3 for ds), then one four-lane chunk and the last entries one
// by one.
TEXT ·dualDotAVX2(SB), NOSPLIT, $0-112
	MOVQ   a_base+0(FP), SI
	MOVQ   a_len+8(FP), CX
	MOVQ   da_base+24(FP), DI
	MOVQ   b_base+48(FP), R8
	MOVQ   db_base+72(FP), R9
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	XORQ   AX, AX
	MOVQ   CX, DX
	ANDQ   $~7, DX
	JZ     btail4

bloop8:
	VMOVUPD     (SI)(AX*8), Y4
	VMOVUPD     32(SI)(AX*8), Y5
	VMOVUPD     (R8)(AX*8), Y6
	VMOVUPD     32(R8)(AX*8), Y7
	VFMADD231PD Y6, Y4, Y0
	VFMADD231PD Y7, Y5, Y1
	VFMADD231PD (DI)(AX*8), Y6, Y2
	VFMADD231PD 32(DI)(AX*8), Y7, Y3
	VFMADD231PD (R9)(AX*8), Y4, Y2
	VFMADD231PD 32(R9)(AX*8), Y5, Y3
	ADDQ        $8, AX
	CMPQ        AX, DX
	JLT         bloop8

btail4:
	MOVQ        CX, DX
	SUBQ        AX, DX
	CMPQ        DX, $4
	JLT         breduce
	VMOVUPD     (SI)(AX*8), Y4
	VMOVUPD     (R8)(AX*8), Y6
	VFMADD231PD Y6, Y4, Y0
	VFMADD231PD (DI)(AX*8), Y6, Y2
	VFMADD231PD (R9)(AX*8), Y4, Y2
	ADDQ        $4, AX

breduce:
	VADDPD       Y1, Y0, Y0
	VADDPD       Y3, Y2, Y2
	VEXTRACTF128 $1, Y0, X1
	VADDPD       X1, X0, X0
	VEXTRACTF128 $1, Y2, X3
	VADDPD       X3, X2, X2
	VHADDPD      X0, X0, X0
	VHADDPD      X2, X2, X2
	CMPQ         AX, CX
	JGE          bdone

bloop1:
	VMOVSD      (SI)(AX*8), X4
	VMOVSD      (R8)(AX*8), X6
	VFMADD231SD X6, X4, X0
	VFMADD231SD (DI)(AX*8), X6, X2
	VFMADD231SD (R9)(AX*8), X4, X2
	INCQ        AX
	CMPQ        AX, CX
	JLT         bloop1

bdone:
	VZEROUPPER
	MOVSD X0, s+96(FP)
	MOVSD X2, ds+104(FP)
	RET

// dualLaneIndex holds the lane numbers 0, 1, 2, 3, for the mask of the
// last, partial chunk of dualBlocksAVX2.
DATA dualLaneIndex<>+0(SB)/8, $0
DATA dualLaneIndex<>+8(SB)/8, $1
DATA dualLaneIndex<>+16(SB)/8, $2
DATA dualLaneIndex<>+24(SB)/8, $3
GLOBL dualLaneIndex<>(SB), RODATA|NOPTR, $32

// The macros below are shared by dualBlocksAVX2 and dualRows4AVX2, whose
// twelve accumulators are Y0-Y3 (values), Y4-Y7 and Y8-Y11 (the two halves
// of the derivatives) of four sums.

// ZERO_SUMS clears the twelve accumulators.
#define ZERO_SUMS \
	VXORPD Y0, Y0, Y0; VXORPD Y1, Y1, Y1; VXORPD Y2, Y2, Y2; VXORPD Y3, Y3, Y3; \
	VXORPD Y4, Y4, Y4; VXORPD Y5, Y5, Y5; VXORPD Y6, Y6, Y6; VXORPD Y7, Y7, Y7; \
	VXORPD Y8, Y8, Y8; VXORPD Y9, Y9, Y9; VXORPD Y10, Y10, Y10; VXORPD Y11, Y11, Y11

// CHUNKS sets CX to the number of whole chunks of four entries of DX, AX
// to the bytes a pointer advances over them, and the flags to CX's.
#define CHUNKS \
	MOVQ DX, CX; SHRQ $2, CX; MOVQ CX, AX; SHLQ $5, AX; TESTQ CX, CX

// TAIL_MASK sets Y15 to the mask of the first CX lanes (CX in 1..3),
// using Y14.
#define TAIL_MASK \
	VMOVQ CX, X15; VPBROADCASTQ X15, Y15; VMOVDQU dualLaneIndex<>(SB), Y14; VPCMPGTQ Y14, Y15, Y15

// REDUCE_STORE adds the derivative halves (Y4+i += Y8+i), reduces each
// of the four value sums and the four derivative sums across its lanes
// into one vector (hadd pairs lanes 01 and 23 of two sums; the 128-bit
// halves are crossed and added), stores them at R12 and R13 and advances
// both by four entries.
#define REDUCE_STORE \
	VADDPD Y8, Y4, Y4; VADDPD Y9, Y5, Y5; VADDPD Y10, Y6, Y6; VADDPD Y11, Y7, Y7; \
	VHADDPD Y1, Y0, Y0; VHADDPD Y3, Y2, Y2; VPERM2F128 $0x21, Y2, Y0, Y1; VBLENDPD $0xC, Y2, Y0, Y3; \
	VADDPD Y3, Y1, Y0; VMOVUPD Y0, (R12); \
	VHADDPD Y5, Y4, Y4; VHADDPD Y7, Y6, Y6; VPERM2F128 $0x21, Y6, Y4, Y5; VBLENDPD $0xC, Y6, Y4, Y7; \
	VADDPD Y7, Y5, Y4; VMOVUPD Y4, (R13); \
	ADDQ $32, R12; ADDQ $32, R13

// func dualBlocksAVX2(a, da, b, db []float64, aStride, step, length int, out, dout []float64)
//
// [dualBlocksGo] for the rows of len(out)/4 whole blocks of four rows
// (the caller checks every extent and does the rows after them). The
// rows r = 4c+q (q = 0..3) of block c share their second vector: with
// o = c step, A_r = a[r aStride + o:], B = b[o:], n = length - o,
// out[r] = sum_t A_r[t] B[t] and dout[r] = sum_t dA_r[t] B[t] + A_r[t] dB[t].
//
// Register blocking: each chunk of four entries of B and dB is loaded once
// for the four rows, so a chunk costs 10 loads for 12 fused multiply-adds
// (4 loads for 3 with one row at a time), and each of the twelve sums has
// its own accumulator, so that no chain waits on an FMA's latency:
//
//	Y0-Y3   sum A_q B          (row q of the block)
//	Y4-Y7   sum dA_q B
//	Y8-Y11  sum A_q dB
//	Y12     B chunk    Y13  dB chunk    Y14  A_q chunk, then dA_q (tail)
//	Y15     lane mask of the tail chunk
//
//	SI, DI  A_0, dA_0 at the chunk (rows q at +q BX; R11 = 3 BX)
//	R8, R9  B, dB at the chunk
//	DX      n of the block    CX  chunks left, then n mod 4
//	AX      bytes the chunk loop advanced the four pointers
//	R10     blocks left       R12, R13  out, dout at the block
//
// The last n mod 4 entries are one masked chunk (the masked lanes read as
// zero and are not touched in memory). Each block's sums are reduced
// lane-wise in a fixed order: the result depends on the shape only.
TEXT ·dualBlocksAVX2(SB), NOSPLIT, $0-168
	MOVQ a_base+0(FP), SI
	MOVQ da_base+24(FP), DI
	MOVQ b_base+48(FP), R8
	MOVQ db_base+72(FP), R9
	MOVQ aStride+96(FP), BX
	SHLQ $3, BX
	LEAQ (BX)(BX*2), R11
	MOVQ length+112(FP), DX
	MOVQ out_base+120(FP), R12
	MOVQ out_len+128(FP), R10
	MOVQ dout_base+144(FP), R13
	SHRQ $2, R10
	JZ   kdone

kblock:
	ZERO_SUMS
	CHUNKS
	JZ     ktail

kloop:
	VMOVUPD     (R8), Y12
	VMOVUPD     (R9), Y13
	VMOVUPD     (SI), Y14
	VFMADD231PD Y14, Y12, Y0
	VFMADD231PD Y14, Y13, Y8
	VFMADD231PD (DI), Y12, Y4
	VMOVUPD     (SI)(BX*1), Y14
	VFMADD231PD Y14, Y12, Y1
	VFMADD231PD Y14, Y13, Y9
	VFMADD231PD (DI)(BX*1), Y12, Y5
	VMOVUPD     (SI)(BX*2), Y14
	VFMADD231PD Y14, Y12, Y2
	VFMADD231PD Y14, Y13, Y10
	VFMADD231PD (DI)(BX*2), Y12, Y6
	VMOVUPD     (SI)(R11*1), Y14
	VFMADD231PD Y14, Y12, Y3
	VFMADD231PD Y14, Y13, Y11
	VFMADD231PD (DI)(R11*1), Y12, Y7
	ADDQ        $32, SI
	ADDQ        $32, DI
	ADDQ        $32, R8
	ADDQ        $32, R9
	DECQ        CX
	JNZ         kloop

ktail:
	MOVQ         DX, CX
	ANDQ         $3, CX
	JZ           kreduce
	TAIL_MASK
	VMASKMOVPD   (R8), Y15, Y12
	VMASKMOVPD   (R9), Y15, Y13
	VMASKMOVPD   (SI), Y15, Y14
	VFMADD231PD  Y14, Y12, Y0
	VFMADD231PD  Y14, Y13, Y8
	VMASKMOVPD   (DI), Y15, Y14
	VFMADD231PD  Y14, Y12, Y4
	VMASKMOVPD   (SI)(BX*1), Y15, Y14
	VFMADD231PD  Y14, Y12, Y1
	VFMADD231PD  Y14, Y13, Y9
	VMASKMOVPD   (DI)(BX*1), Y15, Y14
	VFMADD231PD  Y14, Y12, Y5
	VMASKMOVPD   (SI)(BX*2), Y15, Y14
	VFMADD231PD  Y14, Y12, Y2
	VFMADD231PD  Y14, Y13, Y10
	VMASKMOVPD   (DI)(BX*2), Y15, Y14
	VFMADD231PD  Y14, Y12, Y6
	VMASKMOVPD   (SI)(R11*1), Y15, Y14
	VFMADD231PD  Y14, Y12, Y3
	VFMADD231PD  Y14, Y13, Y11
	VMASKMOVPD   (DI)(R11*1), Y15, Y14
	VFMADD231PD  Y14, Y12, Y7

kreduce:
	REDUCE_STORE

	// Next block: back over the chunk loop's advance, then rows + 4 and
	// o + step.
	SUBQ AX, SI
	SUBQ AX, DI
	SUBQ AX, R8
	SUBQ AX, R9
	MOVQ step+104(FP), CX
	SUBQ CX, DX
	SHLQ $3, CX
	ADDQ CX, R8
	ADDQ CX, R9
	LEAQ (CX)(BX*4), CX
	ADDQ CX, SI
	ADDQ CX, DI
	DECQ R10
	JNZ  kblock

kdone:
	VZEROUPPER
	RET

// func dualRows4AVX2(a, da, b, db []float64, aStride, bStride, bStep, length, dlen int, out, dout []float64)
//
// [dualRows4Go] without its checks: for r in [0, len(out)/4), with
// A = a[r aStride:], B_s = b[r bStep + s bStride:] (s = 0..3) and
// n = length + r dlen entries, out[4r+s] = sum_t A[t] B_s[t] and
// dout[4r+s] = sum_t dA[t] B_s[t] + A[t] dB_s[t].
//
// Register blocking: each chunk of four entries of A and dA (the long
// rows, streamed from the caches below L1) is loaded once for the four
// vectors B_s (short, in L1): 10 loads for 12 fused multiply-adds, and
// each of the twelve sums has its own accumulator:
//
//	Y0-Y3   sum A B_s       Y4-Y7  sum dA B_s      Y8-Y11  sum A dB_s
//	Y12     A chunk         Y13    dA chunk        Y14     B_s chunk
//	Y15     lane mask of the tail chunk, else unused
//
//	SI, DI  A, dA at the chunk
//	R8, R9  B_0, dB_0 at the chunk (B_s at + s BX; R11 = 3 BX)
//	DX      n of the row    CX  chunks left, then n mod 4, then scratch
//	AX      bytes the chunk loop advanced the four pointers
//	R10     rows left       R12, R13  out, dout at the row
//
// The last n mod 4 entries are one masked chunk (the masked lanes read as
// zero and are not touched in memory). The sums are reduced lane-wise in
// a fixed order: the result depends on the shape only.
TEXT ·dualRows4AVX2(SB), NOSPLIT, $0-184
	MOVQ a_base+0(FP), SI
	MOVQ da_base+24(FP), DI
	MOVQ b_base+48(FP), R8
	MOVQ db_base+72(FP), R9
	MOVQ bStride+104(FP), BX
	SHLQ $3, BX
	LEAQ (BX)(BX*2), R11
	MOVQ length+120(FP), DX
	MOVQ out_base+136(FP), R12
	MOVQ out_len+144(FP), R10
	MOVQ dout_base+160(FP), R13
	SHRQ $2, R10
	JZ   rdone

rrow:
	ZERO_SUMS
	CHUNKS
	JZ     rtail

rloop:
	VMOVUPD     (SI), Y12
	VMOVUPD     (DI), Y13
	VMOVUPD     (R8), Y14
	VFMADD231PD Y14, Y12, Y0
	VFMADD231PD Y14, Y13, Y4
	VFMADD231PD (R9), Y12, Y8
	VMOVUPD     (R8)(BX*1), Y14
	VFMADD231PD Y14, Y12, Y1
	VFMADD231PD Y14, Y13, Y5
	VFMADD231PD (R9)(BX*1), Y12, Y9
	VMOVUPD     (R8)(BX*2), Y14
	VFMADD231PD Y14, Y12, Y2
	VFMADD231PD Y14, Y13, Y6
	VFMADD231PD (R9)(BX*2), Y12, Y10
	VMOVUPD     (R8)(R11*1), Y14
	VFMADD231PD Y14, Y12, Y3
	VFMADD231PD Y14, Y13, Y7
	VFMADD231PD (R9)(R11*1), Y12, Y11
	ADDQ        $32, SI
	ADDQ        $32, DI
	ADDQ        $32, R8
	ADDQ        $32, R9
	DECQ        CX
	JNZ         rloop

rtail:
	MOVQ         DX, CX
	ANDQ         $3, CX
	JZ           rreduce
	TAIL_MASK
	VMASKMOVPD   (SI), Y15, Y12
	VMASKMOVPD   (DI), Y15, Y13
	VMASKMOVPD   (R8), Y15, Y14
	VFMADD231PD  Y14, Y12, Y0
	VFMADD231PD  Y14, Y13, Y4
	VMASKMOVPD   (R9), Y15, Y14
	VFMADD231PD  Y14, Y12, Y8
	VMASKMOVPD   (R8)(BX*1), Y15, Y14
	VFMADD231PD  Y14, Y12, Y1
	VFMADD231PD  Y14, Y13, Y5
	VMASKMOVPD   (R9)(BX*1), Y15, Y14
	VFMADD231PD  Y14, Y12, Y9
	VMASKMOVPD   (R8)(BX*2), Y15, Y14
	VFMADD231PD  Y14, Y12, Y2
	VFMADD231PD  Y14, Y13, Y6
	VMASKMOVPD   (R9)(BX*2), Y15, Y14
	VFMADD231PD  Y14, Y12, Y10
	VMASKMOVPD   (R8)(R11*1), Y15, Y14
	VFMADD231PD  Y14, Y12, Y3
	VFMADD231PD  Y14, Y13, Y7
	VMASKMOVPD   (R9)(R11*1), Y15, Y14
	VFMADD231PD  Y14, Y12, Y11

rreduce:
	REDUCE_STORE

	// Next row: back over the chunk loop's advance, then A + aStride,
	// B_s + bStep and n + dlen.
	MOVQ aStride+96(FP), CX
	SHLQ $3, CX
	SUBQ AX, CX
	ADDQ CX, SI
	ADDQ CX, DI
	MOVQ bStep+112(FP), CX
	SHLQ $3, CX
	SUBQ AX, CX
	ADDQ CX, R8
	ADDQ CX, R9
	ADDQ dlen+128(FP), DX
	DECQ R10
	JNZ  rrow

rdone:
	VZEROUPPER
	RET
