//go:build bandkold && !purego

// The former dualBatchAVX2, for BenchmarkBandKernelOldNew (-tags bandkold).

#include "textflag.h"

// func oldDualBatchAVX2(a, da, b, db []float64, aStride, bStride, length, dlen int, out, dout []float64)
//
// For r in [0, len(out)): with A_r = a[r aStride:], B_r = b[r bStride:] and
// n_r = length + r dlen entries, out[r] = sum A_r B_r and dout[r] =
// sum (dA_r B_r + A_r dB_r), with fused multiply-adds on two pairs of
// four-lane accumulators (the caller checks every extent).
TEXT ·oldDualBatchAVX2(SB), NOSPLIT, $0-176
	MOVQ a_base+0(FP), SI
	MOVQ da_base+24(FP), DI
	MOVQ b_base+48(FP), R8
	MOVQ db_base+72(FP), R9
	MOVQ aStride+96(FP), BX
	SHLQ $3, BX
	MOVQ length+112(FP), CX
	MOVQ out_base+128(FP), R12
	MOVQ out_len+136(FP), R11
	MOVQ dout_base+152(FP), R13
	XORQ R10, R10
	CMPQ R11, $0
	JLE  bdone

brow:
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
	JGE          bstore

bloop1:
	VMOVSD      (SI)(AX*8), X4
	VMOVSD      (R8)(AX*8), X6
	VFMADD231SD X6, X4, X0
	VFMADD231SD (DI)(AX*8), X6, X2
	VFMADD231SD (R9)(AX*8), X4, X2
	INCQ        AX
	CMPQ        AX, CX
	JLT         bloop1

bstore:
	MOVSD X0, (R12)(R10*8)
	MOVSD X2, (R13)(R10*8)
	ADDQ  BX, SI
	ADDQ  BX, DI
	MOVQ  bStride+104(FP), DX
	SHLQ  $3, DX
	ADDQ  DX, R8
	ADDQ  DX, R9
	ADDQ  dlen+120(FP), CX
	INCQ  R10
	CMPQ  R10, R11
	JLT   brow

bdone:
	VZEROUPPER
	RET

