/*
 * Memory of a target process.  Handlers read and write through
 * process_vm_readv/process_vm_writev: one system call, and a fault comes
 * back as an error instead of a signal in anyone.  /proc/PID/mem is the
 * fallback where those calls are not allowed, and the only way to write text:
 * the kernel forces such writes through a private copy of the page, as a
 * debugger's breakpoints are.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/uio.h>
#include <unistd.h>

#include "guestrt/hook/hook_priv.h"

static int open_mem(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	int fd = open(path, O_RDWR | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int xflow_tmem_open(struct xflow_tmem *m, pid_t pid)
{
	m->pid = pid;
	m->use_procmem = 0;
	m->memfd = open_mem(pid);
	return m->memfd < 0 ? m->memfd : 0;
}

void xflow_tmem_close(struct xflow_tmem *m)
{
	if (m->memfd >= 0)
		close(m->memfd);
	m->memfd = -1;
}

int xflow_tmem_reopen(struct xflow_tmem *m)
{
	xflow_tmem_close(m);
	return xflow_tmem_open(m, m->pid);
}

/* pread/pwrite on /proc/PID/mem, whole or -EFAULT.  Addresses above 2^63
 * are negative offsets to the kernel: refuse them up front. */
static int procmem_rw(struct xflow_tmem *m, uint64_t addr, void *buf, size_t len, int write)
{
	size_t done = 0;

	if (m->memfd < 0)
		return -EBADF;
	if (addr > (uint64_t)INT64_MAX - len)
		return -EFAULT;
	while (done < len) {
		ssize_t n = write ? pwrite(m->memfd, (const char *)buf + done, len - done, (off_t)(addr + done))
				  : pread(m->memfd, (char *)buf + done, len - done, (off_t)(addr + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EIO ? -EFAULT : -errno;
		if (n == 0)
			return -EFAULT;
		done += (size_t)n;
	}
	return 0;
}

static int vm_rw(struct xflow_tmem *m, uint64_t addr, void *buf, size_t len, int write)
{
	struct iovec local = {.iov_base = buf, .iov_len = len};
	struct iovec remote = {.iov_base = (void *)(uintptr_t)addr, .iov_len = len};
	ssize_t n = write ? process_vm_writev(m->pid, &local, 1, &remote, 1, 0)
			  : process_vm_readv(m->pid, &local, 1, &remote, 1, 0);
	if (n == (ssize_t)len)
		return 0;
	if (n >= 0)
		return -EFAULT; /* partial: some page in the range is not there */
	return -errno;
}

static int rw(struct xflow_tmem *m, uint64_t addr, void *buf, size_t len, int write)
{
	if (len == 0)
		return 0;
	if (len > XFLOW_HOOK_MEM_MAX)
		return -E2BIG;
	if (addr + len < addr)
		return -EFAULT;
	if (!m->use_procmem) {
		int rc = vm_rw(m, addr, buf, len, write);
		if (rc != -ENOSYS && rc != -EPERM)
			return rc;
		m->use_procmem = 1;
	}
	return procmem_rw(m, addr, buf, len, write);
}

int xflow_tmem_read(struct xflow_tmem *m, uint64_t addr, void *buf, size_t len)
{
	return rw(m, addr, buf, len, 0);
}

int xflow_tmem_write(struct xflow_tmem *m, uint64_t addr, const void *buf, size_t len)
{
	return rw(m, addr, (void *)(uintptr_t)buf, len, 1);
}

int xflow_tmem_poke(struct xflow_tmem *m, uint64_t addr, const void *buf, size_t len)
{
	return procmem_rw(m, addr, (void *)(uintptr_t)buf, len, 1);
}

int xflow_tmem_peek(struct xflow_tmem *m, uint64_t addr, void *buf, size_t len)
{
	return procmem_rw(m, addr, buf, len, 0);
}
