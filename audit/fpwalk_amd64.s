#include "textflag.h"

// WALK follows the frame-pointer chain from the frame pointer in SI,
// writing return addresses to DI (CX slots) and counting them in AX. Each
// frame begins with the caller's saved frame pointer, and the return
// address into the caller sits one word above it. The chain ends cleanly
// at a zero frame pointer (the bottom of a goroutine) or when the slots
// are full; it is cut short (BX = 0) at a frame pointer that cannot be the
// next frame of the same goroutine stack: not above the current one, more
// than 1 MiB above it, or misaligned (a chain running into C frames of a
// cgo callback). Nothing is called, so the stack cannot move meanwhile.
#define WALK \
	XORQ AX, AX; \
	MOVQ $1, BX; \
walkNext: \
	CMPQ AX, CX; \
	JGE  walkDone; \
	TESTQ SI, SI; \
	JEQ  walkDone; \
	MOVQ 8(SI), DX; \
	MOVQ DX, (DI)(AX*8); \
	INCQ AX; \
	MOVQ (SI), R8; \
	TESTQ R8, R8; \
	JEQ  walkDone; \
	CMPQ R8, SI; \
	JLS  walkCut; \
	MOVQ R8, R9; \
	SUBQ SI, R9; \
	CMPQ R9, $0x100000; \
	JHI  walkCut; \
	TESTQ $7, R8; \
	JNE  walkCut; \
	MOVQ R8, SI; \
	JMP  walkNext; \
walkCut: \
	XORQ BX, BX; \
walkDone:

// func fpCallers(pcs []uintptr) (n int, complete bool)
//
// With no frame of its own (NOSPLIT, $0), BP still holds the frame pointer
// of the Go function that called it.
TEXT ·fpCallers(SB), NOSPLIT, $0-33
	MOVQ pcs_base+0(FP), DI
	MOVQ pcs_len+8(FP), CX
	MOVQ BP, SI
	WALK
	MOVQ AX, n+24(FP)
	MOVB BX, complete+32(FP)
	RET

// func fpWalkFrom(fp uintptr, pcs []uintptr) (n int, complete bool)
TEXT ·fpWalkFrom(SB), NOSPLIT, $0-41
	MOVQ fp+0(FP), SI
	MOVQ pcs_base+8(FP), DI
	MOVQ pcs_len+16(FP), CX
	WALK
	MOVQ AX, n+32(FP)
	MOVB BX, complete+40(FP)
	RET
