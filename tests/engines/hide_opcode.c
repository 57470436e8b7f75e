/* LD_PRELOAD shim for the tests: makes liburing's opcode probe deny the
 * opcode named by MDFIO_HIDE_OPCODE (a number), as an older kernel would. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <liburing.h>
#include <stdlib.h>

struct io_uring_probe *io_uring_get_probe_ring(struct io_uring *ring)
{
	/* the engine's liburing is loaded with it (RTLD_LOCAL): RTLD_NEXT
	 * cannot see it, its own handle can */
	void *lib = dlopen("liburing.so.2", RTLD_LAZY);
	struct io_uring_probe *(*real)(struct io_uring *) =
		(struct io_uring_probe *(*)(struct io_uring *))dlsym(lib, "io_uring_get_probe_ring");
	struct io_uring_probe *p = real ? real(ring) : NULL;
	const char *op = getenv("MDFIO_HIDE_OPCODE");

	if (p && op && atoi(op) < p->ops_len)
		p->ops[atoi(op)].flags &= (__u16)~IO_URING_OP_SUPPORTED;
	return p;
}
