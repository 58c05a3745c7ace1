//go:build !purego

#include "textflag.h"

// func dualDotAVX2(a, da, b, db []float64) (s, ds float64)
//
// s = sum a_t b_t and ds = sum (da_t b_t + a_t db_t) over len(a) entries,
// with AVX2 fused multiply-adds on two pairs of four-lane accumulators
// (the caller checks the CPU and that every slice is long enough).
TEXT ·dualDotAVX2(SB), NOSPLIT, $0-112
	MOVQ a_base+0(FP), SI
	MOVQ a_len+8(FP), CX
	MOVQ da_base+24(FP), DI
	MOVQ b_base+48(FP), R8
	MOVQ db_base+72(FP), R9
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	XORQ AX, AX
	MOVQ CX, DX
	ANDQ $~7, DX
	JZ   tail4

loop8:
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
	JLT         loop8

tail4:
	MOVQ        CX, DX
	SUBQ        AX, DX
	CMPQ        DX, $4
	JLT         reduce
	VMOVUPD     (SI)(AX*8), Y4
	VMOVUPD     (R8)(AX*8), Y6
	VFMADD231PD Y6, Y4, Y0
	VFMADD231PD (DI)(AX*8), Y6, Y2
	VFMADD231PD (R9)(AX*8), Y4, Y2
	ADDQ        $4, AX

reduce:
	VADDPD       Y1, Y0, Y0
	VADDPD       Y3, Y2, Y2
	VEXTRACTF128 $1, Y0, X1
	VADDPD       X1, X0, X0
	VEXTRACTF128 $1, Y2, X3
	VADDPD       X3, X2, X2
	VHADDPD      X0, X0, X0
	VHADDPD      X2, X2, X2
	CMPQ         AX, CX
	JGE          done

loop1:
	VMOVSD      (SI)(AX*8), X4
	VMOVSD      (R8)(AX*8), X6
	VFMADD231SD X6, X4, X0
	VFMADD231SD (DI)(AX*8), X6, X2
	VFMADD231SD (R9)(AX*8), X4, X2
	INCQ        AX
	CMPQ        AX, CX
	JLT         loop1

done:
	VZEROUPPER
	MOVSD X0, s+96(FP)
	MOVSD X2, ds+104(FP)
	RET
