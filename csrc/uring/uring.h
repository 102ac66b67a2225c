/* uring.h: a minimal io_uring ring for reads, over the kernel's
 * <linux/io_uring.h> and the raw syscalls (no liburing).
 *
 * A ring reads a list of (file offset, address, length) requests from one
 * file descriptor, keeping up to a given number in flight and submitting
 * them in batches; requests into registered buffers use READ_FIXED. The
 * shim has no policy: it retries nothing but an interrupted wait, treats
 * a short read as a failure of that request, and returns a code with the
 * step that failed. Nothing here prints.
 */
#ifndef KVTIER_URING_H
#define KVTIER_URING_H

#include <stdint.h>
#include <sys/uio.h>

typedef struct kv_uring kv_uring;

enum {
	/* kv_uring_err.code of a read (or write) that moved fewer bytes than asked
	 * (the file was truncated under the reader); other codes are errnos. */
	KV_URING_SHORT = -1,
};

/* A kv_uring_err says which step failed and how. */
typedef struct {
	const char *op; /* "io_uring_setup", "mmap", "io_uring_register", "io_uring_enter", "read", "write" */
	int code;       /* errno, or KV_URING_SHORT */
	long index;     /* for op "read": the request that failed; -1 else */
	long long res;  /* for a short read: the bytes it returned */
} kv_uring_err;

/* One read: len bytes at file offset off into addr. buf is the index of
 * the registered buffer that holds [addr, addr+len), or -1. */
typedef struct {
	uint64_t off;
	uint64_t addr;
	uint32_t len;
	int32_t buf;
} kv_uring_req;

/* KV_URING_COOP_TASKRUN is IORING_SETUP_COOP_TASKRUN (Linux 5.19): no
 * interrupt of the task to post completions, which it collects when it
 * waits anyway. Older kernels refuse it with EINVAL. */
#define KV_URING_COOP_TASKRUN (1U << 8)

/* KV_URING_SUBMIT_BATCH is the most requests one io_uring_enter submits
 * while more could be placed (fio's iodepth_batch_submit). Refilling
 * every free slot and submitting them at once holds the first back until
 * the last is prepared and the device is notified once for the lot; small
 * batches reach it sooner. On a virtio disk, 16 KiB O_DIRECT reads at
 * depth 32 moved about 12% more with batches of 1 to 8 than with the
 * whole refill at once; 4 takes a quarter of the syscalls of 1. */
#define KV_URING_SUBMIT_BATCH 4

/* A kv_uring_stats counts a ring's io_uring_enter calls and the most
 * requests one of them submitted, since the ring was opened. */
typedef struct {
	unsigned long long enters;
	unsigned max_submit;
} kv_uring_stats;

/* kv_uring_open sets up a ring of at least entries submission entries
 * with the io_uring_setup flags given. */
kv_uring *kv_uring_open(unsigned entries, unsigned flags, kv_uring_err *e);

/* kv_uring_entries is the ring's submission queue size. */
unsigned kv_uring_entries(const kv_uring *r);

/* kv_uring_register registers n buffers (each at most 1 GiB) for
 * READ_FIXED; a second call replaces the first set. */
int kv_uring_register(kv_uring *r, const struct iovec *iov, unsigned n, kv_uring_err *e);

/* kv_uring_read reads the n requests from fd with up to depth in flight
 * (depth is clamped to the ring's size), submitting at most
 * KV_URING_SUBMIT_BATCH per io_uring_enter and waiting for a completion
 * only when the depth is reached. On the first failed request it
 * submits no more, waits for those in flight and returns -1 with e naming
 * that request; it never returns with a read still in flight unless the
 * kernel refuses io_uring_enter itself (op "io_uring_enter"), after which
 * the ring must be closed. */
int kv_uring_read(kv_uring *r, int fd, const kv_uring_req *req, long n, unsigned depth, kv_uring_err *e);

/* kv_uring_write is kv_uring_read writing: each request writes len bytes
 * at addr to file offset off (WRITE_FIXED from a registered buffer); a
 * failure names op "write", a short write is KV_URING_SHORT. */
int kv_uring_write(kv_uring *r, int fd, const kv_uring_req *req, long n, unsigned depth, kv_uring_err *e);

/* kv_uring_stat fills s with the ring's counts. */
void kv_uring_stat(const kv_uring *r, kv_uring_stats *s);

/* kv_uring_close unmaps and closes the ring. */
void kv_uring_close(kv_uring *r);

#endif
