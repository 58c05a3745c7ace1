//go:build !purego

#include "textflag.h"

// These kernels round every product and sum on its own (VMULPD, VADDPD; no
// fused multiply-add), so that they give the bits of their Go versions
// (decayRowGo, transformRowGo) as the Go compiler builds them for amd64.

// func decayRowAVX(w, g, a []float64, gr, ar float64)
//
// w[u] = gr g[u] + (ar w[u]) a[u] over len(w) entries.
TEXT ·decayRowAVX(SB), NOSPLIT, $0-88
	MOVQ         w_base+0(FP), DI
	MOVQ         w_len+8(FP), CX
	MOVQ         g_base+24(FP), R8
	MOVQ         a_base+48(FP), R9
	VBROADCASTSD gr+72(FP), Y0
	VBROADCASTSD ar+80(FP), Y1
	XORQ         SI, SI
	MOVQ         CX, DX
	ANDQ         $~3, DX
	JZ           dtail

dloop:
	VMULPD  (DI)(SI*8), Y1, Y2
	VMULPD  (R9)(SI*8), Y2, Y2
	VMULPD  (R8)(SI*8), Y0, Y3
	VADDPD  Y2, Y3, Y3
	VMOVUPD Y3, (DI)(SI*8)
	ADDQ    $4, SI
	CMPQ    SI, DX
	JLT     dloop

dtail:
	CMPQ   SI, CX
	JGE    ddone
	VMOVSD (DI)(SI*8), X2
	VMULSD X1, X2, X2
	VMULSD (R9)(SI*8), X2, X2
	VMOVSD (R8)(SI*8), X3
	VMULSD X0, X3, X3
	VADDSD X2, X3, X3
	VMOVSD X3, (DI)(SI*8)
	INCQ   SI
	JMP    dtail

ddone:
	VZEROUPPER
	RET

// func transformRowAVX(w, delta, za, zb, wy1, wy2, x []float64, c *[8]float64)
//
// With c = (da, p1, p2, zaa, zba, q1, q2, xa), over len(w) entries:
// w[b] = ((((((da w[b]) d[b] + p1 za[b]) + p2 zb[b])
//        + (zaa wy1[b] + zba wy2[b]) d[b]) + q1 za[b]) + q2 zb[b]) + xa x[b].
TEXT ·transformRowAVX(SB), NOSPLIT, $0-176
	MOVQ         w_base+0(FP), DI
	MOVQ         w_len+8(FP), CX
	MOVQ         delta_base+24(FP), R8
	MOVQ         za_base+48(FP), R9
	MOVQ         zb_base+72(FP), R10
	MOVQ         wy1_base+96(FP), R11
	MOVQ         wy2_base+120(FP), R12
	MOVQ         x_base+144(FP), R13
	MOVQ         c+168(FP), AX
	VBROADCASTSD (AX), Y0
	VBROADCASTSD 8(AX), Y1
	VBROADCASTSD 16(AX), Y2
	VBROADCASTSD 24(AX), Y3
	VBROADCASTSD 32(AX), Y4
	VBROADCASTSD 40(AX), Y5
	VBROADCASTSD 48(AX), Y6
	VBROADCASTSD 56(AX), Y7
	XORQ         SI, SI
	MOVQ         CX, DX
	ANDQ         $~3, DX
	JZ           ttail

tloop:
	VMOVUPD (R8)(SI*8), Y9
	VMULPD  (DI)(SI*8), Y0, Y8
	VMULPD  Y9, Y8, Y8
	VMOVUPD (R9)(SI*8), Y10
	VMOVUPD (R10)(SI*8), Y12
	VMULPD  Y10, Y1, Y11
	VADDPD  Y11, Y8, Y8
	VMULPD  Y12, Y2, Y11
	VADDPD  Y11, Y8, Y8
	VMULPD  (R11)(SI*8), Y3, Y11
	VMULPD  (R12)(SI*8), Y4, Y13
	VADDPD  Y13, Y11, Y11
	VMULPD  Y9, Y11, Y11
	VADDPD  Y11, Y8, Y8
	VMULPD  Y10, Y5, Y11
	VADDPD  Y11, Y8, Y8
	VMULPD  Y12, Y6, Y11
	VADDPD  Y11, Y8, Y8
	VMULPD  (R13)(SI*8), Y7, Y11
	VADDPD  Y11, Y8, Y8
	VMOVUPD Y8, (DI)(SI*8)
	ADDQ    $4, SI
	CMPQ    SI, DX
	JLT     tloop

ttail:
	CMPQ   SI, CX
	JGE    tdone
	VMOVSD (R8)(SI*8), X9
	VMOVSD (DI)(SI*8), X8
	VMULSD X0, X8, X8
	VMULSD X9, X8, X8
	VMOVSD (R9)(SI*8), X10
	VMOVSD (R10)(SI*8), X12
	VMULSD X10, X1, X11
	VADDSD X11, X8, X8
	VMULSD X12, X2, X11
	VADDSD X11, X8, X8
	VMOVSD (R11)(SI*8), X11
	VMULSD X3, X11, X11
	VMOVSD (R12)(SI*8), X13
	VMULSD X4, X13, X13
	VADDSD X13, X11, X11
	VMULSD X9, X11, X11
	VADDSD X11, X8, X8
	VMULSD X10, X5, X11
	VADDSD X11, X8, X8
	VMULSD X12, X6, X11
	VADDSD X11, X8, X8
	VMOVSD (R13)(SI*8), X11
	VMULSD X7, X11, X11
	VADDSD X11, X8, X8
	VMOVSD X8, (DI)(SI*8)
	INCQ   SI
	JMP    ttail

tdone:
	VZEROUPPER
	RET
