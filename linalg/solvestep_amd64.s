//go:build !purego

#include "textflag.h"

// func subDot4AVX2(x, h0, h1, h2, h3 []float64, p *[4]float64)
//
// x[j] -= p0 h0[j] + p1 h1[j] + p2 h2[j] + p3 h3[j] over len(x) entries,
// the sum formed left to right with fused multiply-adds.
TEXT ·subDot4AVX2(SB), NOSPLIT, $0-128
	MOVQ         x_base+0(FP), DI
	MOVQ         x_len+8(FP), CX
	MOVQ         h0_base+24(FP), R8
	MOVQ         h1_base+48(FP), R9
	MOVQ         h2_base+72(FP), R10
	MOVQ         h3_base+96(FP), R11
	MOVQ         p+120(FP), AX
	VBROADCASTSD (AX), Y0
	VBROADCASTSD 8(AX), Y1
	VBROADCASTSD 16(AX), Y2
	VBROADCASTSD 24(AX), Y3
	XORQ         SI, SI
	MOVQ         CX, DX
	ANDQ         $~3, DX
	JZ           stail

sloop:
	VMULPD      (R8)(SI*8), Y0, Y4
	VFMADD231PD (R9)(SI*8), Y1, Y4
	VFMADD231PD (R10)(SI*8), Y2, Y4
	VFMADD231PD (R11)(SI*8), Y3, Y4
	VMOVUPD     (DI)(SI*8), Y5
	VSUBPD      Y4, Y5, Y5
	VMOVUPD     Y5, (DI)(SI*8)
	ADDQ        $4, SI
	CMPQ        SI, DX
	JLT         sloop

stail:
	CMPQ        SI, CX
	JGE         sdone
	VMOVSD      (R8)(SI*8), X4
	VMULSD      X0, X4, X4
	VFMADD231SD (R9)(SI*8), X1, X4
	VFMADD231SD (R10)(SI*8), X2, X4
	VFMADD231SD (R11)(SI*8), X3, X4
	VMOVSD      (DI)(SI*8), X5
	VSUBSD      X4, X5, X5
	VMOVSD      X5, (DI)(SI*8)
	INCQ        SI
	JMP         stail

sdone:
	VZEROUPPER
	RET

// func updateAVX2(h, x []float64, a, q float64)
//
// h[j] = a h[j] + q x[j] over len(h) entries: fma(a, h[j], q x[j]).
TEXT ·updateAVX2(SB), NOSPLIT, $0-64
	MOVQ         h_base+0(FP), DI
	MOVQ         h_len+8(FP), CX
	MOVQ         x_base+24(FP), R8
	VBROADCASTSD a+48(FP), Y0
	VBROADCASTSD q+56(FP), Y1
	XORQ         SI, SI
	MOVQ         CX, DX
	ANDQ         $~3, DX
	JZ           utail

uloop:
	VMULPD      (R8)(SI*8), Y1, Y4
	VFMADD231PD (DI)(SI*8), Y0, Y4
	VMOVUPD     Y4, (DI)(SI*8)
	ADDQ        $4, SI
	CMPQ        SI, DX
	JLT         uloop

utail:
	CMPQ        SI, CX
	JGE         udone
	VMOVSD      (R8)(SI*8), X4
	VMULSD      X1, X4, X4
	VFMADD231SD (DI)(SI*8), X0, X4
	VMOVSD      X4, (DI)(SI*8)
	INCQ        SI
	JMP         utail

udone:
	VZEROUPPER
	RET

// func accScale4AVX2(out, f0, f1, f2, f3 []float64, p, a *[4]float64)
//
// out[j] += p0 f0[j] + p1 f1[j] + p2 f2[j] + p3 f3[j] (the sum formed left
// to right with fused multiply-adds, then added to out[j]) and f_t[j] *=
// a_t, over len(out) entries.
TEXT ·accScale4AVX2(SB), NOSPLIT, $0-136
	MOVQ         out_base+0(FP), DI
	MOVQ         out_len+8(FP), CX
	MOVQ         f0_base+24(FP), R8
	MOVQ         f1_base+48(FP), R9
	MOVQ         f2_base+72(FP), R10
	MOVQ         f3_base+96(FP), R11
	MOVQ         p+120(FP), AX
	MOVQ         a+128(FP), BX
	VBROADCASTSD (AX), Y0
	VBROADCASTSD 8(AX), Y1
	VBROADCASTSD 16(AX), Y2
	VBROADCASTSD 24(AX), Y3
	VBROADCASTSD (BX), Y6
	VBROADCASTSD 8(BX), Y7
	VBROADCASTSD 16(BX), Y8
	VBROADCASTSD 24(BX), Y9
	XORQ         SI, SI
	MOVQ         CX, DX
	ANDQ         $~3, DX
	JZ           atail

aloop:
	VMOVUPD     (R8)(SI*8), Y10
	VMULPD      Y10, Y0, Y4
	VMULPD      Y10, Y6, Y10
	VMOVUPD     Y10, (R8)(SI*8)
	VMOVUPD     (R9)(SI*8), Y11
	VFMADD231PD Y11, Y1, Y4
	VMULPD      Y11, Y7, Y11
	VMOVUPD     Y11, (R9)(SI*8)
	VMOVUPD     (R10)(SI*8), Y12
	VFMADD231PD Y12, Y2, Y4
	VMULPD      Y12, Y8, Y12
	VMOVUPD     Y12, (R10)(SI*8)
	VMOVUPD     (R11)(SI*8), Y13
	VFMADD231PD Y13, Y3, Y4
	VMULPD      Y13, Y9, Y13
	VMOVUPD     Y13, (R11)(SI*8)
	VADDPD      (DI)(SI*8), Y4, Y4
	VMOVUPD     Y4, (DI)(SI*8)
	ADDQ        $4, SI
	CMPQ        SI, DX
	JLT         aloop

atail:
	CMPQ        SI, CX
	JGE         adone
	VMOVSD      (R8)(SI*8), X10
	VMULSD      X10, X0, X4
	VMULSD      X10, X6, X10
	VMOVSD      X10, (R8)(SI*8)
	VMOVSD      (R9)(SI*8), X11
	VFMADD231SD X11, X1, X4
	VMULSD      X11, X7, X11
	VMOVSD      X11, (R9)(SI*8)
	VMOVSD      (R10)(SI*8), X12
	VFMADD231SD X12, X2, X4
	VMULSD      X12, X8, X12
	VMOVSD      X12, (R10)(SI*8)
	VMOVSD      (R11)(SI*8), X13
	VFMADD231SD X13, X3, X4
	VMULSD      X13, X9, X13
	VMOVSD      X13, (R11)(SI*8)
	VADDSD      (DI)(SI*8), X4, X4
	VMOVSD      X4, (DI)(SI*8)
	INCQ        SI
	JMP         atail

adone:
	VZEROUPPER
	RET

// func update4AVX2(h0, h1, h2, h3, x []float64, a, q *[4]float64)
//
// h_t[j] = a_t h_t[j] + q_t x[j] over len(x) entries, for t = 0..3:
// fma(a_t, h_t[j], q_t x[j]), as updateAVX2 computes each.
TEXT ·update4AVX2(SB), NOSPLIT, $0-136
	MOVQ         h0_base+0(FP), R8
	MOVQ         h1_base+24(FP), R9
	MOVQ         h2_base+48(FP), R10
	MOVQ         h3_base+72(FP), R11
	MOVQ         x_base+96(FP), DI
	MOVQ         x_len+104(FP), CX
	MOVQ         a+120(FP), AX
	MOVQ         q+128(FP), BX
	VBROADCASTSD (AX), Y0
	VBROADCASTSD 8(AX), Y1
	VBROADCASTSD 16(AX), Y2
	VBROADCASTSD 24(AX), Y3
	VBROADCASTSD (BX), Y6
	VBROADCASTSD 8(BX), Y7
	VBROADCASTSD 16(BX), Y8
	VBROADCASTSD 24(BX), Y9
	XORQ         SI, SI
	MOVQ         CX, DX
	ANDQ         $~3, DX
	JZ           u4tail

u4loop:
	VMOVUPD     (DI)(SI*8), Y5
	VMULPD      Y5, Y6, Y10
	VFMADD231PD (R8)(SI*8), Y0, Y10
	VMOVUPD     Y10, (R8)(SI*8)
	VMULPD      Y5, Y7, Y11
	VFMADD231PD (R9)(SI*8), Y1, Y11
	VMOVUPD     Y11, (R9)(SI*8)
	VMULPD      Y5, Y8, Y12
	VFMADD231PD (R10)(SI*8), Y2, Y12
	VMOVUPD     Y12, (R10)(SI*8)
	VMULPD      Y5, Y9, Y13
	VFMADD231PD (R11)(SI*8), Y3, Y13
	VMOVUPD     Y13, (R11)(SI*8)
	ADDQ        $4, SI
	CMPQ        SI, DX
	JLT         u4loop

u4tail:
	CMPQ        SI, CX
	JGE         u4done
	VMOVSD      (DI)(SI*8), X5
	VMULSD      X5, X6, X10
	VFMADD231SD (R8)(SI*8), X0, X10
	VMOVSD      X10, (R8)(SI*8)
	VMULSD      X5, X7, X11
	VFMADD231SD (R9)(SI*8), X1, X11
	VMOVSD      X11, (R9)(SI*8)
	VMULSD      X5, X8, X12
	VFMADD231SD (R10)(SI*8), X2, X12
	VMOVSD      X12, (R10)(SI*8)
	VMULSD      X5, X9, X13
	VFMADD231SD (R11)(SI*8), X3, X13
	VMOVSD      X13, (R11)(SI*8)
	INCQ        SI
	JMP         u4tail

u4done:
	VZEROUPPER
	RET
