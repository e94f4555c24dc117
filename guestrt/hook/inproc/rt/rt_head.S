/*
 * The in-process runtime's assembly: the image's head (struct xflow_rt_head,
 * offsets computed by the linker, guestrt/hook/inproc/rt/rt.lds), the fault-safe
 * accesses, the signal restorer, the stub the agent's injected system
 * calls run through, and the zone stub every trampoline calls.
 *
 * Nothing here may hold an absolute address: the image runs wherever the
 * agent maps it (the build links it twice at different bases and compares).
 */
#include "xflow/inproc.h"

	.section .rt_head, "a"
	.globl rt_image_start
	.hidden rt_image_start
rt_image_start:
	.long XFLOW_RT_MAGIC
	.long XFLOW_RT_VERSION
	.long rt_off_code_end
	.long rt_off_data_size
	.long rt_off_hit
	.long rt_off_config
	.long rt_off_globals
	.long rt_off_safe_begin
	.long rt_off_safe_end
	.long rt_off_safe_fault
	.long rt_off_on_signal
	.long rt_off_restorer
	.long rt_off_syscall
	.long rt_off_zone_stub
	.long rt_off_zone_stub_size
	.long rt_off_name
	.long rt_off_jit_begin, rt_off_jit_room, rt_off_jit_new_id, rt_off_jit_flow_get
	.long rt_off_jit_flow_reg, rt_off_jit_flow_del, rt_off_jit_lock, rt_off_jit_unlock
	.long rt_off_jit_read, rt_off_jit_write, rt_off_jit_flow_peek, rt_off_safe_fs0

	.text

/*
 * int rt_safe_read(uint64_t addr, void *out, uint64_t len)
 * int rt_safe_write(uint64_t addr, const void *in, uint64_t len)
 *
 * One load or store of 1, 2, 4 or 8 bytes at addr that may fault.  A
 * fault (SIGSEGV or SIGBUS, with rip in [rt_safe_begin, rt_safe_end)) is
 * turned by the agent, or by rt_on_signal when the agent is gone, into a
 * return of -EFAULT from rt_safe_fault: these are leaf functions that
 * touch neither the stack nor a callee-saved register before the access,
 * so returning from there is exact.
 */
	.globl rt_safe_read, rt_safe_write, rt_safe_begin, rt_safe_end, rt_safe_fault
	.hidden rt_safe_read, rt_safe_write, rt_safe_begin, rt_safe_end, rt_safe_fault
	.type rt_safe_read, @function
	.type rt_safe_write, @function
rt_safe_begin:
rt_safe_read:
	cmp $8, %rdx
	je 8f
	cmp $4, %rdx
	je 4f
	cmp $2, %rdx
	je 2f
	cmp $1, %rdx
	jne rt_safe_fault
	movzbl (%rdi), %eax
	movb %al, (%rsi)
	xor %eax, %eax
	ret
2:	movzwl (%rdi), %eax
	movw %ax, (%rsi)
	xor %eax, %eax
	ret
4:	movl (%rdi), %eax
	movl %eax, (%rsi)
	xor %eax, %eax
	ret
8:	movq (%rdi), %rax
	movq %rax, (%rsi)
	xor %eax, %eax
	ret
	.size rt_safe_read, .-rt_safe_read

rt_safe_write:
	cmp $8, %rdx
	je 8f
	cmp $4, %rdx
	je 4f
	cmp $2, %rdx
	je 2f
	cmp $1, %rdx
	jne rt_safe_fault
	movzbl (%rsi), %eax
	movb %al, (%rdi)
	xor %eax, %eax
	ret
2:	movzwl (%rsi), %eax
	movw %ax, (%rdi)
	xor %eax, %eax
	ret
4:	movl (%rsi), %eax
	movl %eax, (%rdi)
	xor %eax, %eax
	ret
8:	movq (%rsi), %rax
	movq %rax, (%rdi)
	xor %eax, %eax
	ret
	.size rt_safe_write, .-rt_safe_write

/*
 * uint64_t rt_safe_fs0(void)
 *
 * The word at %fs:0: the TCB's self pointer, the thread's fs base, where the
 * thread follows the x86-64 TLS ABI.  A thread with no TLS (fs base 0)
 * faults here and gets -EFAULT's 32 bits back, which no TCB's address is.
 */
	.globl rt_safe_fs0
	.hidden rt_safe_fs0
	.type rt_safe_fs0, @function
rt_safe_fs0:
	mov %fs:0, %rax
	ret
	.size rt_safe_fs0, .-rt_safe_fs0
rt_safe_end:
rt_safe_fault:
	mov $-14, %eax		/* -EFAULT */
	ret

	.section .rodata
	.globl rt_name
	.hidden rt_name
rt_name:
	.asciz "xflow-rt"

	.text
/* The sa_restorer of the runtime's signal handlers. */
	.globl rt_restorer
	.hidden rt_restorer
rt_restorer:
	mov $15, %eax		/* rt_sigreturn */
	syscall
	ud2

/* Where the agent writes each system call it makes a stopped thread of
 * the target run (guestrt/hook/ptrace/ooline.c): the call, then what puts
 * the thread back as it was, for when the agent dies before it does. */
	.globl rt_syscall
	.hidden rt_syscall
	.balign 16
rt_syscall:
	.fill XFLOW_RT_CALL_AREA, 1, 0xcc

/*
 * The zone stub: a template the agent copies into every text zone, with the
 * address of rt_hit in its last eight bytes.  A trampoline calls it as
 *
 *	lea -128(%rsp), %rsp	past the red zone the program may be using
 *	push %rax
 *	movabs $hook, %rax	struct xflow_rt_hook
 *	call zone_stub
 *	pop %rax
 *	lea 128(%rsp), %rsp
 *
 * It saves every general register and the flags as an array in DWARF's
 * register order (rax rdx rcx rbx rsi rdi rbp rsp r8..r15, then the flags)
 * with the program's own rax and rsp in their slots, calls
 * rt_hit(frame, hook) on a 16-byte aligned stack with the direction flag
 * clear, and restores everything.  The runtime is built with
 * -mgeneral-regs-only, so no vector register needs saving.
 *
 * Restoring the flags with popfq costs about 4 ns here, lahf/sahf under
 * one: sahf sets SF ZF AF PF CF, and adding 0x7f to a byte that is 1 when
 * OF was set, and 0 otherwise, sets OF.  popfq stays for the rare program
 * that was running with DF or AC set.
 */
	.globl rt_zone_stub
	.hidden rt_zone_stub
	.balign 16
rt_zone_stub:
	pushfq
	push %r15
	push %r14
	push %r13
	push %r12
	push %r11
	push %r10
	push %r9
	push %r8
	push %rax		/* the rsp slot, filled in below */
	push %rbp
	push %rdi
	push %rsi
	push %rbx
	push %rcx
	push %rdx
	push %rax		/* the rax slot, filled in below */
	mov %rax, %rsi		/* the hook */
	mov 144(%rsp), %rax	/* the program's rax: past the frame (136) and our return address */
	mov %rax, (%rsp)
	lea 280(%rsp), %rax	/* the program's rsp: past rax, the red zone and the frame */
	mov %rax, 56(%rsp)
	mov %rsp, %rdi
	mov %rsp, %rbx
	and $-16, %rsp
	cld
	call *rt_zone_hit(%rip)
	mov %rbx, %rsp
	mov 128(%rsp), %rax
	test $0x40400, %eax	/* DF or AC */
	jnz 1f
	mov %eax, %edx
	shr $11, %edx
	and $1, %edx
	mov %al, %ah
	mov %dl, %al
	add $0x7f, %al
	sahf
	pop %rax
	pop %rdx
	pop %rcx
	pop %rbx
	pop %rsi
	pop %rdi
	pop %rbp
	lea 8(%rsp), %rsp
	pop %r8
	pop %r9
	pop %r10
	pop %r11
	pop %r12
	pop %r13
	pop %r14
	pop %r15
	lea 8(%rsp), %rsp
	ret
1:	pop %rax
	pop %rdx
	pop %rcx
	pop %rbx
	pop %rsi
	pop %rdi
	pop %rbp
	lea 8(%rsp), %rsp
	pop %r8
	pop %r9
	pop %r10
	pop %r11
	pop %r12
	pop %r13
	pop %r14
	pop %r15
	popfq
	ret
	.balign 8
rt_zone_hit:
	.quad 0
	.globl rt_zone_stub_end
	.hidden rt_zone_stub_end
rt_zone_stub_end:

	.section .note.GNU-stack, "", @progbits
