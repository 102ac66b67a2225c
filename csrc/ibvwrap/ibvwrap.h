/*
 * ibvwrap: a small shim over libibverbs, loaded at run time with dlopen so
 * kvtier builds and runs where the library is absent. It needs no verbs
 * headers: the few types it uses are declared in ibvcore.h. Every function
 * returns a KVT_IBV_* code and fills a kvt_ibv_status with a message; none
 * prints. The interface uses plain C types only. A loaded library is never
 * closed (no dlclose).
 */
#ifndef KVTIER_IBVWRAP_H
#define KVTIER_IBVWRAP_H

#include <stddef.h>
#include <stdint.h>

#include "../shim/shim.h"

/* Status codes. */
enum {
	KVT_IBV_OK = 0,
	KVT_IBV_ENOLIB = 2,  /* libibverbs could not be loaded */
	KVT_IBV_ENODEV = 3,  /* no RDMA device / no active port */
	KVT_IBV_ESYS = 4,    /* a verb failed; sys_errno says why */
	KVT_IBV_EWC = 5,     /* a work completion failed */
	KVT_IBV_EARG = 6,    /* bad argument (GID index, QP count, ...) */
	KVT_IBV_EUNSUP = 7,  /* optional symbol missing (ibv_reg_dmabuf_mr) */
	KVT_IBV_ETIMEOUT = 8, /* no completion for too long */
	KVT_IBV_EAGAIN = 9    /* a time slice passed, reads still in flight */
};

#define KVT_IBV_MAXQP 64

/* A kvt_ibv_status is shim.h's error: code a KVT_IBV_* code, sys_errno
 * the errno of the failing verb (0 if none), wc_status the enum
 * ibv_wc_status of a failed completion, index the failing work request
 * (-1 if none). */
typedef kv_shim_err kvt_ibv_status;

/* What an opened endpoint found. */
typedef struct {
	char device[64];
	int port;
	int link_layer;      /* 1 InfiniBand, 2 Ethernet */
	int state;           /* enum ibv_port_state, 4 = ACTIVE */
	int active_mtu;      /* enum ibv_mtu: 1=256 ... 5=4096 */
	uint16_t lid;
	int gid_tbl_len;
	int max_qp_rd_atom;  /* reads in flight per QP the device answers (responder) */
	int max_qp_init_rd_atom; /* reads in flight per QP the device issues (initiator) */
	uint32_t max_msg_sz;
	int nqp;
	uint32_t qpn[KVT_IBV_MAXQP];
} kvt_ibv_ep_attr;

/* One RDMA READ: len bytes from raddr/rkey into laddr/lkey on QP qp. */
typedef struct {
	uint64_t laddr;
	uint64_t raddr;
	uint32_t len;
	uint32_t lkey;
	uint32_t rkey;
	uint32_t qp;
} kvt_ibv_wr;

typedef struct kvt_ibv_lib kvt_ibv_lib;
typedef struct kvt_ibv_ep kvt_ibv_ep;

/* kvt_ibv_load loads libibverbs from path, or where path is NULL or empty
 * from libibverbs.so.1, then libibverbs.so, and resolves its symbols. The
 * message lists every path tried. Each call loads anew; the caller keeps
 * one library per path. */
kvt_ibv_lib *kvt_ibv_load(const char *path, kvt_ibv_status *st);
/* kvt_ibv_has_dmabuf reports whether ibv_reg_dmabuf_mr was found. */
int kvt_ibv_has_dmabuf(const kvt_ibv_lib *L);
/* kvt_ibv_devices writes the names of the RDMA devices, newline
 * separated, into buf. */
int kvt_ibv_devices(kvt_ibv_lib *L, char *buf, size_t len, kvt_ibv_status *st);

/* kvt_ibv_ep_open opens device (NULL or "" = first with an active port)
 * at port (0 = first active), allocates a PD, one CQ and nqp RC QPs with
 * send queues of sq_depth. */
int kvt_ibv_ep_open(kvt_ibv_lib *L, const char *device, int port, int nqp, int sq_depth,
		    kvt_ibv_ep **out, kvt_ibv_ep_attr *attr, kvt_ibv_status *st);
/* kvt_ibv_ep_gid reads GID index of the endpoint's port. */
int kvt_ibv_ep_gid(kvt_ibv_ep *ep, int index, uint8_t gid[16], kvt_ibv_status *st);
/* Registration flags. KVT_IBV_REG_RELAXED asks for PCIe relaxed ordering
 * (IBV_ACCESS_RELAXED_ORDERING), granted where libibverbs has
 * ibv_reg_mr_iova2 (which drops it where the kernel lacks it). */
#define KVT_IBV_REG_RELAXED 1
/* KVT_IBV_REG_REMOTE_WRITE grants remote write (IBV_ACCESS_REMOTE_WRITE):
 * only a pool that takes stores asks for it. */
#define KVT_IBV_REG_REMOTE_WRITE 2

/* kvt_ibv_ep_reg registers host memory (or device memory where
 * nvidia-peermem is loaded) for local write and remote read, and remote
 * write where flags hold KVT_IBV_REG_REMOTE_WRITE. */
int kvt_ibv_ep_reg(kvt_ibv_ep *ep, void *addr, size_t len, int flags, void **mr,
		   uint32_t *lkey, uint32_t *rkey, kvt_ibv_status *st);
/* kvt_ibv_ep_reg_dmabuf registers len bytes at offset of a DMA-BUF fd
 * mapped at iova. The caller keeps fd (and may close it once this
 * returns: the registration holds its own reference). */
int kvt_ibv_ep_reg_dmabuf(kvt_ibv_ep *ep, uint64_t offset, size_t len,
			  uint64_t iova, int fd, int flags, void **mr, uint32_t *lkey,
			  uint32_t *rkey, kvt_ibv_status *st);
int kvt_ibv_ep_dereg(kvt_ibv_ep *ep, void *mr, kvt_ibv_status *st);
/* How to connect an endpoint's QPs to the remote ones (nqp of each). */
typedef struct {
	int gid_index;          /* local GID index, -1 on InfiniBand */
	int mtu;                /* enum ibv_mtu */
	int rd_atom;            /* max_rd_atomic: reads this side issues per QP */
	int dest_rd_atom;       /* max_dest_rd_atomic: reads this side answers per QP */
	int traffic_class;      /* GRH traffic class, 0-255 */
	int sl;                 /* service level, 0-15 */
	const uint32_t *local_psn;
	const uint32_t *remote_qpn;
	const uint32_t *remote_psn;
	uint16_t remote_lid;
	const uint8_t *remote_gid; /* 16 bytes */
} kvt_ibv_conn;

/* kvt_ibv_ep_connect moves every QP to RTS against the remote QPs. A
 * failed move is reported with ibv_modify_qp's return value. */
int kvt_ibv_ep_connect(kvt_ibv_ep *ep, const kvt_ibv_conn *c, kvt_ibv_status *st);
/* What a batch does: RDMA READ (remote into local) or RDMA WRITE (local
 * into remote). */
#define KVT_IBV_OP_READ 0
#define KVT_IBV_OP_WRITE 1
/*
 * A batch of reads or writes (op) runs in time slices so the caller can
 * check for cancellation between them: kvt_ibv_rd_start copies the n
 * requests (wrs grouped by QP,
 * qstart[q] .. qstart[q+1]-1 are QP q's) into a read state;
 * kvt_ibv_rd_poll posts and polls, keeping up to outstanding in flight per
 * QP, every one signalled, until all complete (KVT_IBV_OK), one fails, no
 * completion came for timeout_ms (KVT_IBV_ETIMEOUT, counted across
 * slices), or slice_ms passed (KVT_IBV_EAGAIN: call it again). A failure
 * names the failing index and its status string. After any failure or
 * to give up, kvt_ibv_rd_abort must run before the memory is released.
 */
typedef struct kvt_ibv_rd kvt_ibv_rd;
int kvt_ibv_rd_start(kvt_ibv_ep *ep, int op, const kvt_ibv_wr *wrs, int n, const int *qstart,
		     int outstanding, kvt_ibv_rd **out, kvt_ibv_status *st);
int kvt_ibv_rd_poll(kvt_ibv_rd *rd, int slice_ms, int timeout_ms, kvt_ibv_status *st);
/* kvt_ibv_rd_inflight counts the reads posted and not yet completed. */
int kvt_ibv_rd_inflight(const kvt_ibv_rd *rd);
/* kvt_ibv_rd_abort moves every QP of the endpoint to the error state, so
 * the device flushes what is in flight, and polls the flushed completions
 * until none is outstanding (KVT_IBV_OK) or drain_ms passed
 * (KVT_IBV_ETIMEOUT). *flushed counts the completions drained. */
int kvt_ibv_rd_abort(kvt_ibv_rd *rd, int drain_ms, int *flushed, kvt_ibv_status *st);
/* kvt_ibv_rd_free frees the read state (not the endpoint). */
void kvt_ibv_rd_free(kvt_ibv_rd *rd);
/* kvt_ibv_ep_close tears down QPs, CQ, PD and the device, in that order. */
void kvt_ibv_ep_close(kvt_ibv_ep *ep);

#endif
