//go:build !purego

#include "textflag.h"

// The three kernels of BidiagGram.InvSqrtDiagParallel for sixteen shifts
// side by side (four ymm registers of four lanes), in the order of
// operations of their Go versions in invsqrt_lanes.go (no fused
// multiply-add), so that both give the same bits.

// func fwdLanesAVX(g2prev, h2 []float64, s, t *[16]float64, p []float64)
//
// For j = 0, ..., len(h2)-1 and every lane l: q = t_l / (g2prev[j] + t_l),
// x = h2[j] q, p[16 j + l] = x, t_l = s_l + x.
TEXT ·fwdLanesAVX(SB), NOSPLIT, $0-88
	MOVQ g2prev_base+0(FP), SI
	MOVQ h2_base+24(FP), DI
	MOVQ h2_len+32(FP), CX
	MOVQ s+48(FP), R8
	MOVQ t+56(FP), R9
	MOVQ p_base+64(FP), R10
	VMOVUPD (R8), Y0
	VMOVUPD 32(R8), Y1
	VMOVUPD 64(R8), Y2
	VMOVUPD 96(R8), Y3
	VMOVUPD (R9), Y4
	VMOVUPD 32(R9), Y5
	VMOVUPD 64(R9), Y6
	VMOVUPD 96(R9), Y7
	XORQ    AX, AX
	TESTQ   CX, CX
	JZ      fdone

floop:
	VBROADCASTSD (SI)(AX*8), Y8
	VADDPD       Y8, Y4, Y9
	VADDPD       Y8, Y5, Y10
	VADDPD       Y8, Y6, Y11
	VADDPD       Y8, Y7, Y12
	VDIVPD       Y9, Y4, Y9
	VDIVPD       Y10, Y5, Y10
	VDIVPD       Y11, Y6, Y11
	VDIVPD       Y12, Y7, Y12
	VBROADCASTSD (DI)(AX*8), Y8
	VMULPD       Y8, Y9, Y9
	VMULPD       Y8, Y10, Y10
	VMULPD       Y8, Y11, Y11
	VMULPD       Y8, Y12, Y12
	VMOVUPD      Y9, (R10)
	VMOVUPD      Y10, 32(R10)
	VMOVUPD      Y11, 64(R10)
	VMOVUPD      Y12, 96(R10)
	VADDPD       Y9, Y0, Y4
	VADDPD       Y10, Y1, Y5
	VADDPD       Y11, Y2, Y6
	VADDPD       Y12, Y3, Y7
	ADDQ         $128, R10
	INCQ         AX
	CMPQ         AX, CX
	JLT          floop

fdone:
	VMOVUPD Y4, (R9)
	VMOVUPD Y5, 32(R9)
	VMOVUPD Y6, 64(R9)
	VMOVUPD Y7, 96(R9)
	VZEROUPPER
	RET

// func bwdLanesAVX(g2, h2next []float64, s, u *[16]float64, uout []float64)
//
// For j = len(g2)-1 down to 0 and every lane l: q = u_l / (h2next[j] + u_l),
// u_l = s_l + g2[j] q, uout[16 j + l] = u_l.
TEXT ·bwdLanesAVX(SB), NOSPLIT, $0-88
	MOVQ g2_base+0(FP), SI
	MOVQ g2_len+8(FP), CX
	MOVQ h2next_base+24(FP), DI
	MOVQ s+48(FP), R8
	MOVQ u+56(FP), R9
	MOVQ uout_base+64(FP), R10
	VMOVUPD (R8), Y0
	VMOVUPD 32(R8), Y1
	VMOVUPD 64(R8), Y2
	VMOVUPD 96(R8), Y3
	VMOVUPD (R9), Y4
	VMOVUPD 32(R9), Y5
	VMOVUPD 64(R9), Y6
	VMOVUPD 96(R9), Y7
	MOVQ    CX, AX
	SHLQ    $7, CX
	ADDQ    CX, R10
	TESTQ   AX, AX
	JZ      bdone

bloop:
	DECQ         AX
	SUBQ         $128, R10
	VBROADCASTSD (DI)(AX*8), Y8
	VADDPD       Y8, Y4, Y9
	VADDPD       Y8, Y5, Y10
	VADDPD       Y8, Y6, Y11
	VADDPD       Y8, Y7, Y12
	VDIVPD       Y9, Y4, Y9
	VDIVPD       Y10, Y5, Y10
	VDIVPD       Y11, Y6, Y11
	VDIVPD       Y12, Y7, Y12
	VBROADCASTSD (SI)(AX*8), Y8
	VMULPD       Y8, Y9, Y9
	VMULPD       Y8, Y10, Y10
	VMULPD       Y8, Y11, Y11
	VMULPD       Y8, Y12, Y12
	VADDPD       Y9, Y0, Y4
	VADDPD       Y10, Y1, Y5
	VADDPD       Y11, Y2, Y6
	VADDPD       Y12, Y3, Y7
	VMOVUPD      Y4, (R10)
	VMOVUPD      Y5, 32(R10)
	VMOVUPD      Y6, 64(R10)
	VMOVUPD      Y7, 96(R10)
	TESTQ        AX, AX
	JNZ          bloop

bdone:
	VMOVUPD Y4, (R9)
	VMOVUPD Y5, 32(R9)
	VMOVUPD Y6, 64(R9)
	VMOVUPD Y7, 96(R9)
	VZEROUPPER
	RET

// func combineLanesAVX(p, u []float64, w *[16]float64, out []float64)
//
// For j = 0, ..., len(out)-1: r_l = w_l / (p[16 j + l] + u[16 j + l]),
// a_k = (r_k + r_{4+k}) + (r_{8+k} + r_{12+k}), and
// out[j] += (a_0 + a_2) + (a_1 + a_3).
TEXT ·combineLanesAVX(SB), NOSPLIT, $0-80
	MOVQ p_base+0(FP), SI
	MOVQ u_base+24(FP), DI
	MOVQ w+48(FP), R8
	MOVQ out_base+56(FP), R9
	MOVQ out_len+64(FP), CX
	VMOVUPD (R8), Y0
	VMOVUPD 32(R8), Y1
	VMOVUPD 64(R8), Y2
	VMOVUPD 96(R8), Y3
	XORQ    AX, AX
	TESTQ   CX, CX
	JZ      cdone

cloop:
	VMOVUPD     (SI), Y4
	VMOVUPD     32(SI), Y5
	VMOVUPD     64(SI), Y6
	VMOVUPD     96(SI), Y7
	VADDPD      (DI), Y4, Y4
	VADDPD      32(DI), Y5, Y5
	VADDPD      64(DI), Y6, Y6
	VADDPD      96(DI), Y7, Y7
	VDIVPD      Y4, Y0, Y4
	VDIVPD      Y5, Y1, Y5
	VDIVPD      Y6, Y2, Y6
	VDIVPD      Y7, Y3, Y7
	VADDPD      Y5, Y4, Y4
	VADDPD      Y7, Y6, Y6
	VADDPD      Y6, Y4, Y4
	VEXTRACTF128 $1, Y4, X5
	VADDPD      X5, X4, X4
	VUNPCKHPD   X4, X4, X5
	VADDSD      X5, X4, X4
	VADDSD      (R9)(AX*8), X4, X4
	VMOVSD      X4, (R9)(AX*8)
	ADDQ        $128, SI
	ADDQ        $128, DI
	INCQ        AX
	CMPQ        AX, CX
	JLT         cloop

cdone:
	VZEROUPPER
	RET
