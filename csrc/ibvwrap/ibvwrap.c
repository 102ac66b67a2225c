/*
 * ibvwrap.c: see ibvwrap.h. One symbol list (KVT_IBV_SYMBOLS) names every
 * libibverbs entry point with its ABI version and whether it is required;
 * it is expanded for the pointer table and the loader (ibvsyms.h). The
 * hot path (post_send, poll_cq) goes through the context's ops table, as
 * verbs.h's inline ibv_post_send and ibv_poll_cq do: they have no symbol
 * of their own. No verbs header is needed: ibvcore.h declares the types.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dlvsym */
#endif
#include "ibvwrap.h"

#include <stdio.h>
#include <string.h>

static void kvt_set(kvt_ibv_status *st, int code, int err, const char *fmt, const char *a, const char *b)
{
	if (!st)
		return;
	st->code = code;
	st->sys_errno = err;
	snprintf(st->msg, sizeof(st->msg), fmt, a ? a : "", b ? b : "");
}

static void kvt_clear(kvt_ibv_status *st)
{
	if (st)
		kv_shim_clear(st);
}

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "ibvcore.h"
#include "ibvsyms.h"

/* A kvt_ibv_lib is one loaded libibverbs: its handle and its table. */
#define KVT_DECL(name, ver, req, ret, params) ret(*p_##name) params;
struct kvt_ibv_lib {
	kv_shim_lib head; /* the library and the path that opened */
	KVT_IBV_SYMBOLS(KVT_DECL)
};
#undef KVT_DECL

/* kvt_load_failed turns shim.h's loader codes into the shim's. */
static kvt_ibv_lib *kvt_load_failed(kvt_ibv_status *st)
{
	int oom = st->code == KV_SHIM_ERR_NO_MEMORY;
	st->sys_errno = oom ? ENOMEM : 0;
	st->code = oom ? KVT_IBV_ESYS : KVT_IBV_ENOLIB;
	return NULL;
}

kvt_ibv_lib *kvt_ibv_load(const char *path, kvt_ibv_status *st)
{
	static const char *const names[] = {"libibverbs.so.1", "libibverbs.so", NULL};
	kvt_ibv_lib *L = kv_shim_open(path, names, "libibverbs", sizeof(*L), st);
	if (!L)
		return kvt_load_failed(st);
#define KVT_LOAD(name, ver, req, ret, params)                         \
	L->p_##name = (ret(*) params)dlvsym(L->head.lib, #name, ver); \
	if (!L->p_##name && (req)) {                                  \
		kv_shim_missing(L, #name, ver, st);                   \
		return kvt_load_failed(st);                           \
	}
	KVT_IBV_SYMBOLS(KVT_LOAD)
#undef KVT_LOAD
	return L;
}

int kvt_ibv_has_dmabuf(const kvt_ibv_lib *L) { return L->p_ibv_reg_dmabuf_mr != NULL; }

static int kvt_sys(kvt_ibv_status *st, const char *what, const char *dev)
{
	int e = errno ? errno : EIO;
	if (st) {
		st->code = KVT_IBV_ESYS;
		st->sys_errno = e;
		snprintf(st->msg, sizeof(st->msg), "%s%s%s: %s", what, dev ? " " : "", dev ? dev : "", strerror(e));
	}
	return KVT_IBV_ESYS;
}

/* kvt_nodev reports a failed ibv_get_device_list (ENOSYS where the
 * kernel has no RDMA support) as no device, with the reason. */
static int kvt_nodev(kvt_ibv_status *st)
{
	int e = errno ? errno : ENODEV;
	if (st) {
		st->code = KVT_IBV_ENODEV;
		st->sys_errno = e;
		snprintf(st->msg, sizeof(st->msg), "no RDMA device (ibv_get_device_list: %s)", strerror(e));
	}
	return KVT_IBV_ENODEV;
}

/* kvt_query_port asks the IBVERBS_1.1 ibv_query_port, which fills the
 * compat part of attr (everything the shim reads); the rest stays zero. */
static int kvt_query_port(kvt_ibv_lib *L, struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	return L->p_ibv_query_port(ctx, port, (struct _compat_ibv_port_attr *)attr);
}

int kvt_ibv_devices(kvt_ibv_lib *L, char *buf, size_t len, kvt_ibv_status *st)
{
	kvt_clear(st);
	int n = 0;
	errno = 0;
	struct ibv_device **list = L->p_ibv_get_device_list(&n);
	if (!list)
		return kvt_nodev(st);
	size_t used = 0;
	if (len)
		buf[0] = 0;
	for (int i = 0; i < n && used < len; i++)
		used += snprintf(buf + used, len - used, "%s\n", L->p_ibv_get_device_name(list[i]));
	L->p_ibv_free_device_list(list);
	return KVT_IBV_OK;
}

struct kvt_ibv_ep {
	kvt_ibv_lib *L;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	int nqp;
	struct ibv_qp *qp[KVT_IBV_MAXQP];
	int port;
	int link_layer;
	int cqe;
};

void kvt_ibv_ep_close(kvt_ibv_ep *ep)
{
	if (!ep)
		return;
	kvt_ibv_lib *L = ep->L;
	for (int i = ep->nqp - 1; i >= 0; i--)
		if (ep->qp[i])
			L->p_ibv_destroy_qp(ep->qp[i]);
	if (ep->cq)
		L->p_ibv_destroy_cq(ep->cq);
	if (ep->pd)
		L->p_ibv_dealloc_pd(ep->pd);
	if (ep->ctx)
		L->p_ibv_close_device(ep->ctx);
	free(ep);
}

/* kvt_first_active returns the first active port of ctx, or 0. */
static int kvt_first_active(kvt_ibv_lib *L, struct ibv_context *ctx, int nports)
{
	for (int p = 1; p <= nports; p++) {
		struct ibv_port_attr pa;
		if (kvt_query_port(L, ctx, (uint8_t)p, &pa) == 0 && pa.state == IBV_PORT_ACTIVE)
			return p;
	}
	return 0;
}

/* kvt_ep_pick opens into ep the first device of list named device (any,
 * if empty) with port (or, if 0, an active port), and its attributes. */
static int kvt_ep_pick(kvt_ibv_lib *L, struct ibv_device **list, int ndev, const char *device, int port,
		       kvt_ibv_ep *ep, struct ibv_device_attr *da, const char **name, kvt_ibv_status *st)
{
	int named = device && device[0];
	for (int i = 0; i < ndev; i++) {
		const char *n = L->p_ibv_get_device_name(list[i]);
		if (named && strcmp(n, device) != 0)
			continue;
		struct ibv_context *ctx = L->p_ibv_open_device(list[i]);
		if (!ctx) {
			if (named)
				return kvt_sys(st, "ibv_open_device", n);
			continue;
		}
		if (L->p_ibv_query_device(ctx, da) != 0) {
			L->p_ibv_close_device(ctx);
			continue;
		}
		int p = port == 0 ? kvt_first_active(L, ctx, da->phys_port_cnt) : port;
		if (p < 1 || p > da->phys_port_cnt) {
			L->p_ibv_close_device(ctx);
			if (named) {
				kvt_set(st, KVT_IBV_ENODEV, 0, "no active port on %s%s", n, NULL);
				return KVT_IBV_ENODEV;
			}
			continue;
		}
		ep->ctx = ctx;
		ep->port = p;
		*name = n;
		return KVT_IBV_OK;
	}
	if (named)
		kvt_set(st, KVT_IBV_ENODEV, 0, "no RDMA device named %s%s", device, NULL);
	else
		kvt_set(st, KVT_IBV_ENODEV, 0, "no RDMA device with an active port%s%s", NULL, NULL);
	return KVT_IBV_ENODEV;
}

/* kvt_ep_port reads ep's port and da's limits into attr. */
static int kvt_ep_port(kvt_ibv_ep *ep, const struct ibv_device_attr *da, kvt_ibv_ep_attr *attr,
		       kvt_ibv_status *st)
{
	struct ibv_port_attr pa;
	if (kvt_query_port(ep->L, ep->ctx, (uint8_t)ep->port, &pa) != 0)
		return kvt_sys(st, "ibv_query_port", attr->device);
	attr->port = ep->port;
	attr->link_layer = pa.link_layer;
	attr->state = pa.state;
	attr->active_mtu = pa.active_mtu;
	attr->lid = pa.lid;
	attr->gid_tbl_len = pa.gid_tbl_len;
	attr->max_qp_rd_atom = da->max_qp_rd_atom;
	attr->max_qp_init_rd_atom = da->max_qp_init_rd_atom;
	attr->max_msg_sz = pa.max_msg_sz;
	ep->link_layer = pa.link_layer;
	return KVT_IBV_OK;
}

/* kvt_ep_new_qp creates an RC QP on ep's PD and CQ; NULL (errno says
 * why) if it fails. */
static struct ibv_qp *kvt_ep_new_qp(kvt_ibv_ep *ep, int sq_depth)
{
	struct ibv_qp_init_attr ia;
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = ep->cq;
	ia.recv_cq = ep->cq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = sq_depth;
	ia.cap.max_recv_wr = 1;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	errno = 0;
	return ep->L->p_ibv_create_qp(ep->pd, &ia);
}

/* kvt_ep_queues gives ep its PD, one CQ and nqp QPs of sq_depth sends
 * each (clamped to da's limits), naming the QPs in attr. */
static int kvt_ep_queues(kvt_ibv_ep *ep, int nqp, int sq_depth, const struct ibv_device_attr *da,
			 kvt_ibv_ep_attr *attr, kvt_ibv_status *st)
{
	kvt_ibv_lib *L = ep->L;
	errno = 0;
	if (!(ep->pd = L->p_ibv_alloc_pd(ep->ctx)))
		return kvt_sys(st, "ibv_alloc_pd", attr->device);
	if (sq_depth < 1)
		sq_depth = 1;
	if (sq_depth > da->max_qp_wr)
		sq_depth = da->max_qp_wr;
	ep->cqe = nqp * sq_depth;
	if (ep->cqe > da->max_cqe)
		ep->cqe = da->max_cqe;
	errno = 0;
	if (!(ep->cq = L->p_ibv_create_cq(ep->ctx, ep->cqe, NULL, NULL, 0)))
		return kvt_sys(st, "ibv_create_cq", attr->device);
	for (int i = 0; i < nqp; i++) {
		if (!(ep->qp[i] = kvt_ep_new_qp(ep, sq_depth)))
			return kvt_sys(st, "ibv_create_qp", attr->device);
		ep->nqp = i + 1;
		attr->qpn[i] = ep->qp[i]->qp_num;
	}
	return KVT_IBV_OK;
}

int kvt_ibv_ep_open(kvt_ibv_lib *L, const char *device, int port, int nqp, int sq_depth,
		    kvt_ibv_ep **out, kvt_ibv_ep_attr *attr, kvt_ibv_status *st)
{
	kvt_clear(st);
	*out = NULL;
	if (nqp < 1 || nqp > KVT_IBV_MAXQP) {
		char n[16];
		snprintf(n, sizeof(n), "%d", nqp);
		kvt_set(st, KVT_IBV_EARG, 0, "QP count %s outside 1..64%s", n, NULL);
		return KVT_IBV_EARG;
	}
	int ndev = 0;
	errno = 0;
	struct ibv_device **list = L->p_ibv_get_device_list(&ndev);
	if (!list)
		return kvt_nodev(st);
	if (ndev == 0) {
		L->p_ibv_free_device_list(list);
		kvt_set(st, KVT_IBV_ENODEV, 0, "no RDMA device%s%s", NULL, NULL);
		return KVT_IBV_ENODEV;
	}
	kvt_ibv_ep *ep = calloc(1, sizeof(*ep));
	if (!ep) {
		L->p_ibv_free_device_list(list);
		return kvt_sys(st, "calloc", NULL);
	}
	ep->L = L;
	struct ibv_device_attr da;
	const char *name = NULL;
	int rc = kvt_ep_pick(L, list, ndev, device, port, ep, &da, &name, st);
	if (rc) {
		L->p_ibv_free_device_list(list);
		free(ep);
		return rc;
	}
	memset(attr, 0, sizeof(*attr));
	snprintf(attr->device, sizeof(attr->device), "%s", name);
	L->p_ibv_free_device_list(list);
	if ((rc = kvt_ep_port(ep, &da, attr, st)) || (rc = kvt_ep_queues(ep, nqp, sq_depth, &da, attr, st))) {
		kvt_ibv_ep_close(ep);
		return rc;
	}
	attr->nqp = nqp;
	*out = ep;
	return KVT_IBV_OK;
}

int kvt_ibv_ep_gid(kvt_ibv_ep *ep, int index, uint8_t gid[16], kvt_ibv_status *st)
{
	kvt_clear(st);
	union ibv_gid g;
	errno = 0;
	if (ep->L->p_ibv_query_gid(ep->ctx, (uint8_t)ep->port, index, &g) != 0)
		return kvt_sys(st, "ibv_query_gid", NULL);
	memcpy(gid, g.raw, 16);
	return KVT_IBV_OK;
}

static const int kvt_access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;

/* kvt_mr_access is what a registration grants: local write and remote
 * read always, remote write only when flags ask (a peer started to take
 * stores), so a read-only pool refuses an RDMA WRITE at the NIC. */
static int kvt_mr_access(int flags)
{
	return IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
	       ((flags & KVT_IBV_REG_REMOTE_WRITE) ? IBV_ACCESS_REMOTE_WRITE : 0);
}

/* kvt_relaxed reports whether a registration asked for relaxed ordering
 * gets it: only through ibv_reg_mr_iova2 (rdma-core 28+), which masks the
 * optional flag where the kernel lacks it, as NCCL does. */
static int kvt_relaxed(const kvt_ibv_ep *ep, int flags)
{
	return (flags & KVT_IBV_REG_RELAXED) && ep->L->p_ibv_reg_mr_iova2;
}

int kvt_ibv_ep_reg(kvt_ibv_ep *ep, void *addr, size_t len, int flags, void **mr,
		   uint32_t *lkey, uint32_t *rkey, kvt_ibv_status *st)
{
	kvt_clear(st);
	errno = 0;
	struct ibv_mr *m;
	if (kvt_relaxed(ep, flags))
		m = ep->L->p_ibv_reg_mr_iova2(ep->pd, addr, len, (uint64_t)(uintptr_t)addr,
					      (unsigned int)(kvt_mr_access(flags) | IBV_ACCESS_RELAXED_ORDERING));
	else
		m = ep->L->p_ibv_reg_mr(ep->pd, addr, len, kvt_mr_access(flags));
	if (!m)
		return kvt_sys(st, "ibv_reg_mr", NULL);
	*mr = m;
	*lkey = m->lkey;
	*rkey = m->rkey;
	return KVT_IBV_OK;
}

int kvt_ibv_ep_reg_dmabuf(kvt_ibv_ep *ep, uint64_t offset, size_t len,
			  uint64_t iova, int fd, int flags, void **mr, uint32_t *lkey,
			  uint32_t *rkey, kvt_ibv_status *st)
{
	kvt_clear(st);
	if (!ep->L->p_ibv_reg_dmabuf_mr) {
		kvt_set(st, KVT_IBV_EUNSUP, 0, "libibverbs lacks ibv_reg_dmabuf_mr@IBVERBS_1.12%s%s", NULL, NULL);
		return KVT_IBV_EUNSUP;
	}
	int access = kvt_mr_access(flags) | (kvt_relaxed(ep, flags) ? IBV_ACCESS_RELAXED_ORDERING : 0);
	errno = 0;
	struct ibv_mr *m = ep->L->p_ibv_reg_dmabuf_mr(ep->pd, offset, len, iova, fd, access);
	if (!m)
		return kvt_sys(st, "ibv_reg_dmabuf_mr", NULL);
	*mr = m;
	*lkey = m->lkey;
	*rkey = m->rkey;
	return KVT_IBV_OK;
}

int kvt_ibv_ep_dereg(kvt_ibv_ep *ep, void *mr, kvt_ibv_status *st)
{
	kvt_clear(st);
	errno = 0;
	if (mr && ep->L->p_ibv_dereg_mr((struct ibv_mr *)mr) != 0)
		return kvt_sys(st, "ibv_dereg_mr", NULL);
	return KVT_IBV_OK;
}

/* kvt_modify moves qp as a and mask say; a failure is reported from
 * ibv_modify_qp's return value, which is the error (errno may be stale). */
static int kvt_modify(kvt_ibv_ep *ep, struct ibv_qp *qp, struct ibv_qp_attr *a, int mask,
		      const char *what, kvt_ibv_status *st)
{
	errno = 0;
	int rc = ep->L->p_ibv_modify_qp(qp, a, mask);
	if (!rc)
		return KVT_IBV_OK;
	errno = rc > 0 ? rc : (errno ? errno : EIO);
	return kvt_sys(st, what, NULL);
}

int kvt_ibv_ep_connect(kvt_ibv_ep *ep, const kvt_ibv_conn *c, kvt_ibv_status *st)
{
	kvt_clear(st);
	for (int i = 0; i < ep->nqp; i++) {
		struct ibv_qp_attr a;
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_INIT;
		a.pkey_index = 0;
		a.port_num = (uint8_t)ep->port;
		a.qp_access_flags = kvt_access;
		if (kvt_modify(ep, ep->qp[i], &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
			       "modify QP to INIT", st))
			return KVT_IBV_ESYS;

		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RTR;
		a.path_mtu = (enum ibv_mtu)c->mtu;
		a.dest_qp_num = c->remote_qpn[i];
		a.rq_psn = c->remote_psn[i] & 0xffffff;
		a.max_dest_rd_atomic = (uint8_t)c->dest_rd_atom;
		a.min_rnr_timer = 12;
		a.ah_attr.dlid = c->remote_lid;
		a.ah_attr.sl = (uint8_t)c->sl;
		a.ah_attr.src_path_bits = 0;
		a.ah_attr.port_num = (uint8_t)ep->port;
		if (ep->link_layer == IBV_LINK_LAYER_ETHERNET || c->gid_index >= 0) {
			a.ah_attr.is_global = 1;
			memcpy(a.ah_attr.grh.dgid.raw, c->remote_gid, 16);
			a.ah_attr.grh.sgid_index = (uint8_t)(c->gid_index < 0 ? 0 : c->gid_index);
			a.ah_attr.grh.hop_limit = 64;
			a.ah_attr.grh.traffic_class = (uint8_t)c->traffic_class;
			a.ah_attr.grh.flow_label = 0;
		}
		if (kvt_modify(ep, ep->qp[i], &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
						  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
			       "modify QP to RTR", st))
			return KVT_IBV_ESYS;

		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RTS;
		a.sq_psn = c->local_psn[i] & 0xffffff;
		a.timeout = 14;
		a.retry_cnt = 7;
		a.rnr_retry = 7;
		a.max_rd_atomic = (uint8_t)c->rd_atom;
		if (kvt_modify(ep, ep->qp[i], &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
						  IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC,
			       "modify QP to RTS", st))
			return KVT_IBV_ESYS;
	}
	return KVT_IBV_OK;
}

static long kvt_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

struct kvt_ibv_rd {
	kvt_ibv_ep *ep;
	kvt_ibv_wr *wrs;     /* a copy: the caller's memory is not kept */
	int opcode;          /* IBV_WR_RDMA_READ or IBV_WR_RDMA_WRITE */
	int n, done, outstanding;
	int qstart[KVT_IBV_MAXQP + 1];
	int next[KVT_IBV_MAXQP];     /* next request to post, per QP */
	int inflight[KVT_IBV_MAXQP]; /* posted, not completed, per QP */
	long last;                   /* when the last completion came */
};

int kvt_ibv_rd_start(kvt_ibv_ep *ep, int op, const kvt_ibv_wr *wrs, int n, const int *qstart,
		     int outstanding, kvt_ibv_rd **out, kvt_ibv_status *st)
{
	kvt_clear(st);
	*out = NULL;
	if ((op != KVT_IBV_OP_READ && op != KVT_IBV_OP_WRITE) || n < 0 || (n > 0 && !wrs) || !qstart) {
		kvt_set(st, KVT_IBV_EARG, 0, "bad read list%s%s", NULL, NULL);
		return KVT_IBV_EARG;
	}
	for (int q = 0; q < ep->nqp; q++) {
		if (qstart[q] < 0 || qstart[q] > qstart[q + 1] || qstart[q + 1] > n) {
			kvt_set(st, KVT_IBV_EARG, 0, "bad read list (QP ranges)%s%s", NULL, NULL);
			return KVT_IBV_EARG;
		}
	}
	kvt_ibv_rd *rd = calloc(1, sizeof(*rd));
	if (!rd || (n > 0 && !(rd->wrs = malloc((size_t)n * sizeof(*wrs))))) {
		free(rd);
		errno = ENOMEM;
		return kvt_sys(st, "read state", NULL);
	}
	if (n > 0)
		memcpy(rd->wrs, wrs, (size_t)n * sizeof(*wrs));
	rd->ep = ep;
	rd->opcode = op == KVT_IBV_OP_WRITE ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ;
	rd->n = n;
	rd->outstanding = outstanding < 1 ? 1 : outstanding > 64 ? 64 : outstanding;
	for (int q = 0; q <= ep->nqp; q++)
		rd->qstart[q] = qstart[q];
	for (int q = 0; q < ep->nqp; q++)
		rd->next[q] = qstart[q];
	rd->last = kvt_now_ms();
	*out = rd;
	return KVT_IBV_OK;
}

int kvt_ibv_rd_inflight(const kvt_ibv_rd *rd)
{
	int k = 0;
	for (int q = 0; q < rd->ep->nqp; q++)
		k += rd->inflight[q];
	return k;
}

/* kvt_rd_credit counts one completion of request idx. */
static void kvt_rd_credit(kvt_ibv_rd *rd, long idx)
{
	if (idx < 0 || idx >= rd->n)
		return;
	uint32_t q = rd->wrs[idx].qp;
	if (q < (uint32_t)rd->ep->nqp && rd->inflight[q] > 0)
		rd->inflight[q]--;
}

/* kvt_rd_fill posts QP q's next requests, up to its limit, as one
 * chained post; on a failed post it counts those posted before the bad one. */
static int kvt_rd_fill(kvt_ibv_rd *rd, int q, kvt_ibv_status *st)
{
	struct ibv_send_wr sw[64];
	struct ibv_sge sg[64];
	int k = 0, next = rd->next[q];
	while (rd->inflight[q] + k < rd->outstanding && next + k < rd->qstart[q + 1])
		k++;
	if (k == 0)
		return KVT_IBV_OK;
	for (int j = 0; j < k; j++) {
		const kvt_ibv_wr *w = &rd->wrs[next + j];
		memset(&sw[j], 0, sizeof(sw[j]));
		sg[j].addr = w->laddr;
		sg[j].length = w->len;
		sg[j].lkey = w->lkey;
		sw[j].wr_id = (uint64_t)(next + j);
		sw[j].sg_list = &sg[j];
		sw[j].num_sge = 1;
		sw[j].opcode = (enum ibv_wr_opcode)rd->opcode;
		sw[j].send_flags = IBV_SEND_SIGNALED;
		sw[j].wr.rdma.remote_addr = w->raddr;
		sw[j].wr.rdma.rkey = w->rkey;
		sw[j].next = j + 1 < k ? &sw[j + 1] : NULL;
	}
	struct ibv_send_wr *bad = NULL;
	int rc = kvt_post_send(rd->ep->qp[q], &sw[0], &bad);
	if (rc) {
		/* The requests before the bad one were posted. */
		int posted = bad ? (int)((long)bad->wr_id - next) : 0;
		if (posted < 0 || posted > k)
			posted = 0;
		rd->inflight[q] += posted;
		rd->next[q] += posted;
		errno = rc;
		kvt_sys(st, "ibv_post_send", NULL);
		st->index = bad ? (long)bad->wr_id : (long)next;
		return KVT_IBV_ESYS;
	}
	rd->inflight[q] += k;
	rd->next[q] += k;
	return KVT_IBV_OK;
}

/* kvt_rd_reap counts got completions; the first failed one is the error. */
static int kvt_rd_reap(kvt_ibv_rd *rd, const struct ibv_wc *wc, int got, kvt_ibv_status *st)
{
	for (int i = 0; i < got; i++) {
		long idx = (long)wc[i].wr_id;
		kvt_rd_credit(rd, idx);
		if (wc[i].status != IBV_WC_SUCCESS) {
			/* Count the rest, so abort knows what is still out. */
			for (int j = i + 1; j < got; j++)
				kvt_rd_credit(rd, (long)wc[j].wr_id);
			st->code = KVT_IBV_EWC;
			st->wc_status = wc[i].status;
			st->index = idx;
			snprintf(st->msg, sizeof(st->msg), "%s", rd->ep->L->p_ibv_wc_status_str(wc[i].status));
			return KVT_IBV_EWC;
		}
		rd->done++;
	}
	return KVT_IBV_OK;
}

int kvt_ibv_rd_poll(kvt_ibv_rd *rd, int slice_ms, int timeout_ms, kvt_ibv_status *st)
{
	kvt_clear(st);
	kvt_ibv_ep *ep = rd->ep;
	long start = kvt_now_ms();
	struct ibv_wc wc[64];
	while (rd->done < rd->n) {
		/* Fill every QP up to its limit with one chained post. */
		for (int q = 0; q < ep->nqp; q++)
			if (kvt_rd_fill(rd, q, st))
				return KVT_IBV_ESYS;
		int got = kvt_poll_cq(ep->cq, 64, wc);
		if (got < 0) {
			errno = EIO;
			return kvt_sys(st, "ibv_poll_cq", NULL);
		}
		long now = kvt_now_ms();
		if (got == 0) {
			if (timeout_ms > 0 && now - rd->last > timeout_ms) {
				char t[32];
				snprintf(t, sizeof(t), "%d", timeout_ms);
				kvt_set(st, KVT_IBV_ETIMEOUT, 0, "no completion for %s ms%s", t, NULL);
				return KVT_IBV_ETIMEOUT;
			}
		} else {
			rd->last = now;
		}
		if (kvt_rd_reap(rd, wc, got, st))
			return KVT_IBV_EWC;
		if (rd->done < rd->n && slice_ms > 0 && now - start >= slice_ms) {
			kvt_set(st, KVT_IBV_EAGAIN, 0, "reads still in flight%s%s", NULL, NULL);
			return KVT_IBV_EAGAIN;
		}
	}
	return KVT_IBV_OK;
}

int kvt_ibv_rd_abort(kvt_ibv_rd *rd, int drain_ms, int *flushed, kvt_ibv_status *st)
{
	kvt_clear(st);
	kvt_ibv_ep *ep = rd->ep;
	*flushed = 0;
	int failed = 0;
	for (int q = 0; q < ep->nqp; q++) {
		struct ibv_qp_attr a;
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_ERR;
		kvt_ibv_status qst;
		kvt_clear(&qst);
		if (kvt_modify(ep, ep->qp[q], &a, IBV_QP_STATE, "modify QP to ERR", &qst) && !failed) {
			*st = qst;
			failed = 1;
		}
	}
	long start = kvt_now_ms();
	struct ibv_wc wc[64];
	while (kvt_ibv_rd_inflight(rd) > 0) {
		int got = kvt_poll_cq(ep->cq, 64, wc);
		if (got < 0) {
			errno = EIO;
			return kvt_sys(st, "ibv_poll_cq (drain)", NULL);
		}
		for (int i = 0; i < got; i++)
			kvt_rd_credit(rd, (long)wc[i].wr_id);
		*flushed += got;
		if (got == 0 && kvt_now_ms() - start > drain_ms) {
			char k[32], t[32];
			snprintf(k, sizeof(k), "%d", kvt_ibv_rd_inflight(rd));
			snprintf(t, sizeof(t), "%d", drain_ms);
			kvt_set(st, KVT_IBV_ETIMEOUT, 0, "%s reads still in flight %s ms after moving the QPs to ERR", k, t);
			return KVT_IBV_ETIMEOUT;
		}
	}
	return failed ? KVT_IBV_ESYS : KVT_IBV_OK;
}

void kvt_ibv_rd_free(kvt_ibv_rd *rd)
{
	if (!rd)
		return;
	free(rd->wrs);
	free(rd);
}
