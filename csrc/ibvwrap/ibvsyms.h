/*
 * ibvsyms.h: the lists the verbs shim is built from, naming types only, so
 * they expand the same over ibvcore.h (the shim) and over rdma-core's
 * verbs.h (the ABI facts test in csrc).
 *
 * KVT_IBV_SYMBOLS: X(name, version, required, return type, (parameters)),
 * each libibverbs entry point once, loaded with dlvsym at its version.
 * ibv_query_port and ibv_reg_mr are macros over inline helpers in current
 * rdma-core; their exported IBVERBS_1.1 symbols take the compat port
 * struct and plain access flags, which is what is declared here.
 *
 * KVT_IBV_SIZES, KVT_IBV_FIELDS, KVT_IBV_CONSTANTS: the sizes, offsets and
 * values the shim relies on.
 */
#ifndef KVTIER_IBVSYMS_H
#define KVTIER_IBVSYMS_H

#define KVT_IBV_SYMBOLS(X)                                                              \
	X(ibv_get_device_list, "IBVERBS_1.1", 1, struct ibv_device **, (int *))         \
	X(ibv_free_device_list, "IBVERBS_1.1", 1, void, (struct ibv_device **))          \
	X(ibv_get_device_name, "IBVERBS_1.1", 1, const char *, (struct ibv_device *))    \
	X(ibv_open_device, "IBVERBS_1.1", 1, struct ibv_context *, (struct ibv_device *)) \
	X(ibv_close_device, "IBVERBS_1.1", 1, int, (struct ibv_context *))               \
	X(ibv_query_device, "IBVERBS_1.1", 1, int, (struct ibv_context *, struct ibv_device_attr *)) \
	X(ibv_query_port, "IBVERBS_1.1", 1, int, (struct ibv_context *, uint8_t, struct _compat_ibv_port_attr *)) \
	X(ibv_query_gid, "IBVERBS_1.1", 1, int, (struct ibv_context *, uint8_t, int, union ibv_gid *)) \
	X(ibv_alloc_pd, "IBVERBS_1.1", 1, struct ibv_pd *, (struct ibv_context *))       \
	X(ibv_dealloc_pd, "IBVERBS_1.1", 1, int, (struct ibv_pd *))                      \
	X(ibv_reg_mr, "IBVERBS_1.1", 1, struct ibv_mr *, (struct ibv_pd *, void *, size_t, int)) \
	X(ibv_dereg_mr, "IBVERBS_1.1", 1, int, (struct ibv_mr *))                        \
	X(ibv_create_cq, "IBVERBS_1.1", 1, struct ibv_cq *, (struct ibv_context *, int, void *, struct ibv_comp_channel *, int)) \
	X(ibv_destroy_cq, "IBVERBS_1.1", 1, int, (struct ibv_cq *))                      \
	X(ibv_create_qp, "IBVERBS_1.1", 1, struct ibv_qp *, (struct ibv_pd *, struct ibv_qp_init_attr *)) \
	X(ibv_destroy_qp, "IBVERBS_1.1", 1, int, (struct ibv_qp *))                      \
	X(ibv_modify_qp, "IBVERBS_1.1", 1, int, (struct ibv_qp *, struct ibv_qp_attr *, int)) \
	X(ibv_wc_status_str, "IBVERBS_1.1", 1, const char *, (enum ibv_wc_status))      \
	X(ibv_reg_mr_iova2, "IBVERBS_1.8", 0, struct ibv_mr *, (struct ibv_pd *, void *, size_t, uint64_t, unsigned int)) \
	X(ibv_reg_dmabuf_mr, "IBVERBS_1.12", 0, struct ibv_mr *, (struct ibv_pd *, uint64_t, size_t, uint64_t, int, int))

/* Structs the shim allocates or passes by size. */
#define KVT_IBV_SIZES(X)                  \
	X(union ibv_gid)                  \
	X(struct ibv_device_attr)         \
	X(struct ibv_qp_init_attr)        \
	X(struct ibv_qp_attr)             \
	X(struct ibv_sge)                 \
	X(struct ibv_send_wr)             \
	X(struct ibv_wc)

/* X(type, member): every member the shim reads or writes. */
#define KVT_IBV_FIELDS(X)                                  \
	X(struct ibv_context, ops.poll_cq)                 \
	X(struct ibv_context, ops.post_send)               \
	X(struct ibv_device_attr, max_qp_wr)               \
	X(struct ibv_device_attr, max_cqe)                 \
	X(struct ibv_device_attr, max_qp_rd_atom)          \
	X(struct ibv_device_attr, max_qp_init_rd_atom)     \
	X(struct ibv_device_attr, phys_port_cnt)           \
	X(struct ibv_port_attr, state)                     \
	X(struct ibv_port_attr, active_mtu)                \
	X(struct ibv_port_attr, gid_tbl_len)               \
	X(struct ibv_port_attr, max_msg_sz)                \
	X(struct ibv_port_attr, lid)                       \
	X(struct ibv_port_attr, link_layer)                \
	X(struct ibv_port_attr, flags)                     \
	X(struct ibv_mr, lkey)                             \
	X(struct ibv_mr, rkey)                             \
	X(struct ibv_cq, context)                          \
	X(struct ibv_qp, context)                          \
	X(struct ibv_qp, qp_num)                           \
	X(struct ibv_qp_init_attr, send_cq)                \
	X(struct ibv_qp_init_attr, recv_cq)                \
	X(struct ibv_qp_init_attr, cap.max_send_wr)        \
	X(struct ibv_qp_init_attr, cap.max_recv_wr)        \
	X(struct ibv_qp_init_attr, cap.max_send_sge)       \
	X(struct ibv_qp_init_attr, cap.max_recv_sge)       \
	X(struct ibv_qp_init_attr, qp_type)                \
	X(struct ibv_qp_attr, qp_state)                    \
	X(struct ibv_qp_attr, path_mtu)                    \
	X(struct ibv_qp_attr, rq_psn)                      \
	X(struct ibv_qp_attr, sq_psn)                      \
	X(struct ibv_qp_attr, dest_qp_num)                 \
	X(struct ibv_qp_attr, qp_access_flags)             \
	X(struct ibv_qp_attr, ah_attr.grh.dgid)            \
	X(struct ibv_qp_attr, ah_attr.grh.flow_label)      \
	X(struct ibv_qp_attr, ah_attr.grh.sgid_index)      \
	X(struct ibv_qp_attr, ah_attr.grh.hop_limit)       \
	X(struct ibv_qp_attr, ah_attr.grh.traffic_class)   \
	X(struct ibv_qp_attr, ah_attr.dlid)                \
	X(struct ibv_qp_attr, ah_attr.sl)                  \
	X(struct ibv_qp_attr, ah_attr.src_path_bits)       \
	X(struct ibv_qp_attr, ah_attr.is_global)           \
	X(struct ibv_qp_attr, ah_attr.port_num)            \
	X(struct ibv_qp_attr, pkey_index)                  \
	X(struct ibv_qp_attr, max_rd_atomic)               \
	X(struct ibv_qp_attr, max_dest_rd_atomic)          \
	X(struct ibv_qp_attr, min_rnr_timer)               \
	X(struct ibv_qp_attr, port_num)                    \
	X(struct ibv_qp_attr, timeout)                     \
	X(struct ibv_qp_attr, retry_cnt)                   \
	X(struct ibv_qp_attr, rnr_retry)                   \
	X(struct ibv_sge, addr)                            \
	X(struct ibv_sge, length)                          \
	X(struct ibv_sge, lkey)                            \
	X(struct ibv_send_wr, wr_id)                       \
	X(struct ibv_send_wr, next)                        \
	X(struct ibv_send_wr, sg_list)                     \
	X(struct ibv_send_wr, num_sge)                     \
	X(struct ibv_send_wr, opcode)                      \
	X(struct ibv_send_wr, send_flags)                  \
	X(struct ibv_send_wr, wr.rdma.remote_addr)         \
	X(struct ibv_send_wr, wr.rdma.rkey)                \
	X(struct ibv_wc, wr_id)                            \
	X(struct ibv_wc, status)                           \
	X(struct ibv_wc, qp_num)

#define KVT_IBV_CONSTANTS(X)              \
	X(IBV_PORT_ACTIVE)                \
	X(IBV_LINK_LAYER_ETHERNET)        \
	X(IBV_QPT_RC)                     \
	X(IBV_QPS_RESET)                  \
	X(IBV_QPS_INIT)                   \
	X(IBV_QPS_RTR)                    \
	X(IBV_QPS_RTS)                    \
	X(IBV_QPS_ERR)                    \
	X(IBV_ACCESS_LOCAL_WRITE)         \
	X(IBV_ACCESS_REMOTE_WRITE)        \
	X(IBV_ACCESS_REMOTE_READ)         \
	X(IBV_ACCESS_RELAXED_ORDERING)    \
	X(IBV_WR_RDMA_READ)               \
	X(IBV_WR_RDMA_WRITE)              \
	X(IBV_SEND_SIGNALED)              \
	X(IBV_WC_SUCCESS)                 \
	X(IBV_WC_WR_FLUSH_ERR)            \
	X(IBV_QP_STATE)                   \
	X(IBV_QP_ACCESS_FLAGS)            \
	X(IBV_QP_PKEY_INDEX)              \
	X(IBV_QP_PORT)                    \
	X(IBV_QP_AV)                      \
	X(IBV_QP_PATH_MTU)                \
	X(IBV_QP_TIMEOUT)                 \
	X(IBV_QP_RETRY_CNT)               \
	X(IBV_QP_RNR_RETRY)               \
	X(IBV_QP_RQ_PSN)                  \
	X(IBV_QP_MAX_QP_RD_ATOMIC)        \
	X(IBV_QP_MIN_RNR_TIMER)           \
	X(IBV_QP_SQ_PSN)                  \
	X(IBV_QP_MAX_DEST_RD_ATOMIC)      \
	X(IBV_QP_DEST_QPN)

#endif
