//go:build !purego

#include "textflag.h"

// Sums of the four products with g over 8 entries from offset AX: the
// products of a, b, c and d (SI, DI, R8, R9) with g in Y0 and Y1 added to
// the accumulators Y8 to Y15 (two per vector) by fused multiply-adds.
#define DOT4STEP \
	VCVTPS2PD   (SI)(AX*4), Y2    \
	VCVTPS2PD   16(SI)(AX*4), Y3  \
	VFMADD231PD Y2, Y0, Y8        \
	VFMADD231PD Y3, Y1, Y9        \
	VCVTPS2PD   (DI)(AX*4), Y4    \
	VCVTPS2PD   16(DI)(AX*4), Y5  \
	VFMADD231PD Y4, Y0, Y10       \
	VFMADD231PD Y5, Y1, Y11       \
	VCVTPS2PD   (R8)(AX*4), Y6    \
	VCVTPS2PD   16(R8)(AX*4), Y7  \
	VFMADD231PD Y6, Y0, Y12       \
	VFMADD231PD Y7, Y1, Y13       \
	VCVTPS2PD   (R9)(AX*4), Y2    \
	VCVTPS2PD   16(R9)(AX*4), Y3  \
	VFMADD231PD Y2, Y0, Y14       \
	VFMADD231PD Y3, Y1, Y15

// The horizontal sum of Y(lo) + Y(hi) into X(lo)'s low lane.
#define HSUM(lo, hi, xlo, xhi) \
	VADDPD       hi, lo, lo    \
	VEXTRACTF128 $1, lo, xhi   \
	VADDPD       xhi, xlo, xlo \
	VHADDPD      xlo, xlo, xlo

#define DOT4RET \
	HSUM(Y8, Y9, X8, X9)      \
	HSUM(Y10, Y11, X10, X11)  \
	HSUM(Y12, Y13, X12, X13)  \
	HSUM(Y14, Y15, X14, X15)  \
	VZEROUPPER                \
	MOVSD X8, s0+120(FP)      \
	MOVSD X10, s1+128(FP)     \
	MOVSD X12, s2+136(FP)     \
	MOVSD X14, s3+144(FP)     \
	RET

#define DOT4INIT \
	MOVQ   a_base+24(FP), SI \
	MOVQ   b_base+48(FP), DI \
	MOVQ   c_base+72(FP), R8 \
	MOVQ   d_base+96(FP), R9 \
	VXORPD Y8, Y8, Y8        \
	VXORPD Y9, Y9, Y9        \
	VXORPD Y10, Y10, Y10     \
	VXORPD Y11, Y11, Y11     \
	VXORPD Y12, Y12, Y12     \
	VXORPD Y13, Y13, Y13     \
	VXORPD Y14, Y14, Y14     \
	VXORPD Y15, Y15, Y15     \
	XORQ   AX, AX

// func dot4x64AVX2(g []float64, a, b, c, d []float32) (s0, s1, s2, s3 float64)
//
// The inner products of a, b, c and d with g over the first len(g) &^ 7
// entries, in float64.
TEXT ·dot4x64AVX2(SB), NOSPLIT, $0-152
	MOVQ g_base+0(FP), DX
	MOVQ g_len+8(FP), CX
	DOT4INIT
	ANDQ $~7, CX
	JZ   d64done

d64loop:
	VMOVUPD (DX)(AX*8), Y0
	VMOVUPD 32(DX)(AX*8), Y1
	DOT4STEP
	ADDQ    $8, AX
	CMPQ    AX, CX
	JLT     d64loop

d64done:
	DOT4RET

// func dot4x32AVX2(g []float32, a, b, c, d []float32) (s0, s1, s2, s3 float64)
//
// dot4x64AVX2 for a float32 g.
TEXT ·dot4x32AVX2(SB), NOSPLIT, $0-152
	MOVQ g_base+0(FP), DX
	MOVQ g_len+8(FP), CX
	DOT4INIT
	ANDQ $~7, CX
	JZ   d32done

d32loop:
	VCVTPS2PD (DX)(AX*4), Y0
	VCVTPS2PD 16(DX)(AX*4), Y1
	DOT4STEP
	ADDQ      $8, AX
	CMPQ      AX, CX
	JLT       d32loop

d32done:
	DOT4RET

// func axpy4AVX2(dst, src []float64, ca, cb, cc, cd float64, a, b, c, d []float32)
//
// dst_i = (((src_i + ca a_i) + cb b_i) + cc c_i) + cd d_i, each step a
// fused multiply-add, over the first len(dst) &^ 7 entries.
TEXT ·axpy4AVX2(SB), NOSPLIT, $0-176
	MOVQ         dst_base+0(FP), BX
	MOVQ         dst_len+8(FP), CX
	MOVQ         src_base+24(FP), DX
	VBROADCASTSD ca+48(FP), Y12
	VBROADCASTSD cb+56(FP), Y13
	VBROADCASTSD cc+64(FP), Y14
	VBROADCASTSD cd+72(FP), Y15
	MOVQ         a_base+80(FP), SI
	MOVQ         b_base+104(FP), DI
	MOVQ         c_base+128(FP), R8
	MOVQ         d_base+152(FP), R9
	XORQ         AX, AX
	ANDQ         $~7, CX
	JZ           axdone

axloop:
	VMOVUPD     (DX)(AX*8), Y0
	VMOVUPD     32(DX)(AX*8), Y1
	VCVTPS2PD   (SI)(AX*4), Y2
	VCVTPS2PD   16(SI)(AX*4), Y3
	VFMADD231PD Y2, Y12, Y0
	VFMADD231PD Y3, Y12, Y1
	VCVTPS2PD   (DI)(AX*4), Y4
	VCVTPS2PD   16(DI)(AX*4), Y5
	VFMADD231PD Y4, Y13, Y0
	VFMADD231PD Y5, Y13, Y1
	VCVTPS2PD   (R8)(AX*4), Y6
	VCVTPS2PD   16(R8)(AX*4), Y7
	VFMADD231PD Y6, Y14, Y0
	VFMADD231PD Y7, Y14, Y1
	VCVTPS2PD   (R9)(AX*4), Y2
	VCVTPS2PD   16(R9)(AX*4), Y3
	VFMADD231PD Y2, Y15, Y0
	VFMADD231PD Y3, Y15, Y1
	VMOVUPD     Y0, (BX)(AX*8)
	VMOVUPD     Y1, 32(BX)(AX*8)
	ADDQ        $8, AX
	CMPQ        AX, CX
	JLT         axloop

axdone:
	VZEROUPPER
	RET
