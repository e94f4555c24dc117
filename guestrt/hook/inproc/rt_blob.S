/*
 * The in-process runtime's image (guestrt/hook/inproc/rt/, built by guestrt/hook/inproc/rt.mk),
 * embedded in the agent as bytes: xflow_rt_blob .. xflow_rt_blob_end.
 */
	.section .rodata
	.balign 4096
	.globl xflow_rt_blob, xflow_rt_blob_end
xflow_rt_blob:
	.incbin RT_BIN
xflow_rt_blob_end:
	.section .note.GNU-stack, "", @progbits
