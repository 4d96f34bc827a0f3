#include "textflag.h"

// func fpCallers(pcs []uintptr) int
//
// With no frame of its own (NOSPLIT, $0), BP still holds the frame pointer
// of the Go function that called it. Each frame there begins with the
// caller's saved frame pointer, and the return address into the caller
// sits one word above it. The chain ends at a zero frame pointer (the
// bottom of a goroutine) or when pcs is full. The function calls nothing,
// so the stack cannot move while it reads it.
TEXT ·fpCallers(SB), NOSPLIT, $0-32
	MOVQ pcs_base+0(FP), DI
	MOVQ pcs_len+8(FP), CX
	MOVQ BP, SI
	XORQ AX, AX

next:
	CMPQ AX, CX
	JGE  done
	TESTQ SI, SI
	JEQ  done
	MOVQ 8(SI), DX
	MOVQ DX, (DI)(AX*8)
	INCQ AX
	MOVQ (SI), SI
	JMP  next

done:
	MOVQ AX, ret+24(FP)
	RET
