/* uring.c: see uring.h. Built by cgo as part of package uring. */
#include "uring.h"

#include <errno.h>
#include <linux/io_uring.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifdef IORING_SETUP_COOP_TASKRUN
_Static_assert(KV_URING_COOP_TASKRUN == IORING_SETUP_COOP_TASKRUN, "IORING_SETUP_COOP_TASKRUN");
#endif


struct kv_uring {
	int fd;
	unsigned sq_entries, cq_entries;
	/* Submission queue ring. */
	void *sq_ring;
	size_t sq_ring_sz;
	unsigned *sq_head, *sq_tail, *sq_mask, *sq_array;
	/* Completion queue ring (the same mapping as the SQ ring where the
	 * kernel has IORING_FEAT_SINGLE_MMAP). */
	void *cq_ring;
	size_t cq_ring_sz;
	unsigned *cq_head, *cq_tail, *cq_mask;
	struct io_uring_cqe *cqes;
	struct io_uring_sqe *sqes;
	size_t sqes_sz;
	unsigned sq_local_tail;
	kv_uring_stats stats;
};

static int fail(kv_uring_err *e, const char *op, int code)
{
	e->op = op;
	e->code = code;
	e->index = -1;
	e->res = 0;
	return -1;
}

static int sys_setup(unsigned entries, struct io_uring_params *p)
{
	return (int)syscall(__NR_io_uring_setup, entries, p);
}

static int sys_enter(int fd, unsigned submit, unsigned wait, unsigned flags)
{
	return (int)syscall(__NR_io_uring_enter, fd, submit, wait, flags, NULL, 0);
}

static int sys_register(int fd, unsigned op, const void *arg, unsigned n)
{
	return (int)syscall(__NR_io_uring_register, fd, op, arg, n);
}

static int map_rings(kv_uring *r, const struct io_uring_params *p, kv_uring_err *e)
{
	r->sq_ring_sz = p->sq_off.array + p->sq_entries * sizeof(unsigned);
	r->cq_ring_sz = p->cq_off.cqes + p->cq_entries * sizeof(struct io_uring_cqe);
	int single = (p->features & IORING_FEAT_SINGLE_MMAP) != 0;
	if (single && r->cq_ring_sz > r->sq_ring_sz)
		r->sq_ring_sz = r->cq_ring_sz;
	r->sq_ring = mmap(NULL, r->sq_ring_sz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd,
			  IORING_OFF_SQ_RING);
	if (r->sq_ring == MAP_FAILED) {
		r->sq_ring = NULL;
		return fail(e, "mmap", errno);
	}
	if (single) {
		r->cq_ring = r->sq_ring;
		r->cq_ring_sz = 0;
	} else {
		r->cq_ring = mmap(NULL, r->cq_ring_sz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd,
				  IORING_OFF_CQ_RING);
		if (r->cq_ring == MAP_FAILED) {
			r->cq_ring = NULL;
			return fail(e, "mmap", errno);
		}
	}
	r->sqes_sz = p->sq_entries * sizeof(struct io_uring_sqe);
	r->sqes = mmap(NULL, r->sqes_sz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_SQES);
	if (r->sqes == MAP_FAILED) {
		r->sqes = NULL;
		return fail(e, "mmap", errno);
	}
	char *sq = r->sq_ring, *cq = r->cq_ring;
	r->sq_head = (unsigned *)(sq + p->sq_off.head);
	r->sq_tail = (unsigned *)(sq + p->sq_off.tail);
	r->sq_mask = (unsigned *)(sq + p->sq_off.ring_mask);
	r->sq_array = (unsigned *)(sq + p->sq_off.array);
	r->cq_head = (unsigned *)(cq + p->cq_off.head);
	r->cq_tail = (unsigned *)(cq + p->cq_off.tail);
	r->cq_mask = (unsigned *)(cq + p->cq_off.ring_mask);
	r->cqes = (struct io_uring_cqe *)(cq + p->cq_off.cqes);
	r->sq_local_tail = *r->sq_tail;
	return 0;
}

kv_uring *kv_uring_open(unsigned entries, unsigned flags, kv_uring_err *e)
{
	struct io_uring_params p;
	memset(&p, 0, sizeof p);
	p.flags = flags;
	int fd = sys_setup(entries ? entries : 1, &p);
	if (fd < 0) {
		fail(e, "io_uring_setup", errno);
		return NULL;
	}
	kv_uring *r = calloc(1, sizeof *r);
	if (!r) {
		close(fd);
		fail(e, "calloc", ENOMEM);
		return NULL;
	}
	r->fd = fd;
	r->sq_entries = p.sq_entries;
	r->cq_entries = p.cq_entries;
	if (map_rings(r, &p, e) != 0) {
		kv_uring_close(r);
		return NULL;
	}
	return r;
}

unsigned kv_uring_entries(const kv_uring *r) { return r->sq_entries; }

int kv_uring_register(kv_uring *r, const struct iovec *iov, unsigned n, kv_uring_err *e)
{
	/* Replacing a set needs the old one gone; ENXIO means there was none. */
	if (sys_register(r->fd, IORING_UNREGISTER_BUFFERS, NULL, 0) < 0 && errno != ENXIO)
		return fail(e, "io_uring_register", errno);
	if (n == 0)
		return 0;
	if (sys_register(r->fd, IORING_REGISTER_BUFFERS, iov, n) < 0)
		return fail(e, "io_uring_register", errno);
	return 0;
}

/* prep places request i in the next submission entry: a read, or a
 * write when write is set. */
static void prep(kv_uring *r, int fd, const kv_uring_req *q, long i, int write)
{
	unsigned idx = r->sq_local_tail & *r->sq_mask;
	struct io_uring_sqe *s = &r->sqes[idx];
	memset(s, 0, sizeof *s);
	if (write)
		s->opcode = q->buf >= 0 ? IORING_OP_WRITE_FIXED : IORING_OP_WRITE;
	else
		s->opcode = q->buf >= 0 ? IORING_OP_READ_FIXED : IORING_OP_READ;
	s->fd = fd;
	s->off = q->off;
	s->addr = q->addr;
	s->len = q->len;
	if (q->buf >= 0)
		s->buf_index = (uint16_t)q->buf;
	s->user_data = (uint64_t)i;
	r->sq_array[idx] = idx;
	r->sq_local_tail++;
}

/* reap consumes every completion queued, recording the first failure in
 * e; it returns how many it consumed. */
static long reap(kv_uring *r, const kv_uring_req *req, const char *op, kv_uring_err *e, int *failed)
{
	unsigned head = *r->cq_head;
	unsigned tail = __atomic_load_n(r->cq_tail, __ATOMIC_ACQUIRE);
	long n = 0;
	for (; head != tail; head++, n++) {
		const struct io_uring_cqe *c = &r->cqes[head & *r->cq_mask];
		long i = (long)c->user_data;
		if (*failed)
			continue;
		if (c->res < 0) {
			fail(e, op, -c->res);
			e->index = i;
			*failed = 1;
		} else if ((uint32_t)c->res != req[i].len) {
			fail(e, op, KV_URING_SHORT);
			e->index = i;
			e->res = c->res;
			*failed = 1;
		}
	}
	__atomic_store_n(r->cq_head, head, __ATOMIC_RELEASE);
	return n;
}

/* enter submits what is queued and, when wait is set, waits for a
 * completion (GETEVENTS also runs deferred completion work, so those
 * already done are posted either way); it counts the call. */
static int enter(kv_uring *r, unsigned wait)
{
	__atomic_store_n(r->sq_tail, r->sq_local_tail, __ATOMIC_RELEASE);
	unsigned pending = r->sq_local_tail - __atomic_load_n(r->sq_head, __ATOMIC_ACQUIRE);
	int got = sys_enter(r->fd, pending, wait, IORING_ENTER_GETEVENTS);
	r->stats.enters++;
	if (got > 0 && (unsigned)got > r->stats.max_submit)
		r->stats.max_submit = (unsigned)got;
	return got < 0 && errno != EINTR ? -1 : 0;
}

/* rw runs the n requests as reads or (write set) writes; see kv_uring_read. */
static int rw(kv_uring *r, int fd, const kv_uring_req *req, long n, unsigned depth, int write, kv_uring_err *e)
{
	const char *op = write ? "write" : "read";
	if (depth == 0 || depth > r->sq_entries)
		depth = r->sq_entries;
	long placed = 0, done = 0;
	int failed = 0;
	while (done < placed || (!failed && placed < n)) {
		for (int k = 0; k < KV_URING_SUBMIT_BATCH && !failed && placed < n && placed - done < (long)depth; k++)
			prep(r, fd, &req[placed], placed, write), placed++;
		int room = !failed && placed < n && placed - done < (long)depth;
		if (enter(r, !room) != 0) {
			int err = errno;
			if (!failed)
				fail(e, "io_uring_enter", err);
			return -1;
		}
		done += reap(r, req, op, e, &failed);
	}
	return failed ? -1 : 0;
}

int kv_uring_read(kv_uring *r, int fd, const kv_uring_req *req, long n, unsigned depth, kv_uring_err *e)
{
	return rw(r, fd, req, n, depth, 0, e);
}

int kv_uring_write(kv_uring *r, int fd, const kv_uring_req *req, long n, unsigned depth, kv_uring_err *e)
{
	return rw(r, fd, req, n, depth, 1, e);
}

void kv_uring_stat(const kv_uring *r, kv_uring_stats *s) { *s = r->stats; }

void kv_uring_close(kv_uring *r)
{
	if (!r)
		return;
	if (r->sqes)
		munmap(r->sqes, r->sqes_sz);
	if (r->cq_ring && r->cq_ring != r->sq_ring)
		munmap(r->cq_ring, r->cq_ring_sz);
	if (r->sq_ring)
		munmap(r->sq_ring, r->sq_ring_sz);
	close(r->fd);
	free(r);
}
