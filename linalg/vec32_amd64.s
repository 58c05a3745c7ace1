//go:build !purego

#include "textflag.h"

// func dot32AVX2(a, b []float32) float64
//
// sum a_t b_t over the first len(a) &^ 7 entries, each converted to
// float64, with two four-lane fused multiply-add accumulators.
TEXT ·dot32AVX2(SB), NOSPLIT, $0-56
	MOVQ   a_base+0(FP), SI
	MOVQ   a_len+8(FP), CX
	MOVQ   b_base+24(FP), R8
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	XORQ   AX, AX
	ANDQ   $~7, CX
	JZ     d32reduce

d32loop:
	VCVTPS2PD   (SI)(AX*4), Y4
	VCVTPS2PD   16(SI)(AX*4), Y5
	VCVTPS2PD   (R8)(AX*4), Y6
	VCVTPS2PD   16(R8)(AX*4), Y7
	VFMADD231PD Y6, Y4, Y0
	VFMADD231PD Y7, Y5, Y1
	ADDQ        $8, AX
	CMPQ        AX, CX
	JLT         d32loop

d32reduce:
	VADDPD       Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPD       X1, X0, X0
	VHADDPD      X0, X0, X0
	VZEROUPPER
	MOVSD        X0, ret+48(FP)
	RET

// func axpyDot32AVX2(alpha float64, x, y, z []float32) float64
//
// Over the first len(x) &^ 7 entries: y_t = float32(y_t + alpha x_t) (a
// fused multiply-add in float64) and then sum z_t y_t in float64.
TEXT ·axpyDot32AVX2(SB), NOSPLIT, $0-88
	VBROADCASTSD alpha+0(FP), Y8
	MOVQ         x_base+8(FP), SI
	MOVQ         x_len+16(FP), CX
	MOVQ         y_base+32(FP), DI
	MOVQ         z_base+56(FP), R8
	VXORPD       Y0, Y0, Y0
	VXORPD       Y1, Y1, Y1
	XORQ         AX, AX
	ANDQ         $~7, CX
	JZ           a32reduce

a32loop:
	VCVTPS2PD   (DI)(AX*4), Y4
	VCVTPS2PD   16(DI)(AX*4), Y5
	VCVTPS2PD   (SI)(AX*4), Y6
	VCVTPS2PD   16(SI)(AX*4), Y7
	VFMADD231PD Y6, Y8, Y4
	VFMADD231PD Y7, Y8, Y5
	VCVTPD2PSY  Y4, X4
	VCVTPD2PSY  Y5, X5
	VMOVUPS     X4, (DI)(AX*4)
	VMOVUPS     X5, 16(DI)(AX*4)
	VCVTPS2PD   X4, Y4
	VCVTPS2PD   X5, Y5
	VCVTPS2PD   (R8)(AX*4), Y6
	VCVTPS2PD   16(R8)(AX*4), Y7
	VFMADD231PD Y6, Y4, Y0
	VFMADD231PD Y7, Y5, Y1
	ADDQ        $8, AX
	CMPQ        AX, CX
	JLT         a32loop

a32reduce:
	VADDPD       Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPD       X1, X0, X0
	VHADDPD      X0, X0, X0
	VZEROUPPER
	MOVSD        X0, ret+80(FP)
	RET
