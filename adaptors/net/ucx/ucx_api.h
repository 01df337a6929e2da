/* The slice of UCX's public ABI (UCP, with the few UCS types it uses) that
 * the ucx net adaptor calls, declared here so that the adaptor builds
 * without UCX's headers (Debian's libucx-dev): a machine with only the
 * run-time libraries (libucx0) gets the adaptor, and one without UCX gets
 * the adaptor's "install libucx0" message at run time.
 *
 * What it matches: UCP API 1.13 (Debian 12's UCX 1.13.1, what CI checks it
 * against).  UCP keeps its ABI by appending members to its parameter
 * structs and reading only those their field_mask names, so a later 1.x
 * reads everything below the same way; ucp_init_version() is told the API
 * version these declarations follow.
 *
 * Names are UCX's own, so the adaptor reads as UCX code; this header cannot
 * be included beside <ucp/api/ucp.h>.  test/ucx_api_check.sh compiles a
 * program that prints the size and offset of every member of every struct
 * and the value of every constant declared below (test/ucx_api_gen.sh reads
 * them from this file), once against this header and once against UCX's,
 * and compares the two.  So: every struct is a typedef declared whole, one
 * member per line, its typedef name on its closing line; a nested union is
 * one member; handles of objects the adaptor never looks into are pointers
 * to incomplete types; constants are UCX's values, only the ones used.
 * The functions are not declared: ucx_lib.c looks them up in the library
 * it opens (ucx_api_t in ucx.h). */
#ifndef SYMHEAP_UCX_API_H
#define SYMHEAP_UCX_API_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h> /* socklen_t, struct sockaddr */

#define UCP_API_MAJOR 1
#define UCP_API_MINOR 13

/* ucs/type/status.h: a packed enum, one byte wide (UCS_S_PACKED). */
typedef enum {
  UCS_OK = 0,
  UCS_INPROGRESS = 1,
  UCS_ERR_NO_MESSAGE = -1,
  UCS_ERR_NO_RESOURCE = -2,
  UCS_ERR_IO_ERROR = -3,
  UCS_ERR_NO_MEMORY = -4,
  UCS_ERR_INVALID_PARAM = -5,
  UCS_ERR_UNREACHABLE = -6,
  UCS_ERR_NO_DEVICE = -14,
  UCS_ERR_BUSY = -15,
  UCS_ERR_CANCELED = -16,
  UCS_ERR_TIMED_OUT = -20,
  UCS_ERR_UNSUPPORTED = -22,
  UCS_ERR_REJECTED = -23,
  UCS_ERR_NOT_CONNECTED = -24,
  UCS_ERR_CONNECTION_RESET = -25,
  UCS_ERR_ENDPOINT_TIMEOUT = -80,
  UCS_ERR_LAST = -100
} __attribute__((packed)) ucs_status_t;

typedef void *ucs_status_ptr_t;
#define UCS_PTR_IS_ERR(_ptr) (((uintptr_t)(_ptr)) >= ((uintptr_t)UCS_ERR_LAST))
#define UCS_PTR_IS_PTR(_ptr)                                                   \
  (((uintptr_t)(_ptr) - 1) < ((uintptr_t)UCS_ERR_LAST - 1))
#define UCS_PTR_RAW_STATUS(_ptr) ((ucs_status_t)(intptr_t)(_ptr))

/* ucs/type/thread_mode.h */
typedef enum {
  UCS_THREAD_MODE_SINGLE,
  UCS_THREAD_MODE_SERIALIZED,
  UCS_THREAD_MODE_MULTI,
  UCS_THREAD_MODE_LAST
} ucs_thread_mode_t;

/* ucs/memory/memory_type.h */
typedef enum ucs_memory_type {
  UCS_MEMORY_TYPE_HOST,
  UCS_MEMORY_TYPE_CUDA,
  UCS_MEMORY_TYPE_CUDA_MANAGED,
  UCS_MEMORY_TYPE_ROCM,
  UCS_MEMORY_TYPE_ROCM_MANAGED,
  UCS_MEMORY_TYPE_LAST
} ucs_memory_type_t;

/* ucs/type/cpu_set.h: 1024 bits. */
typedef struct {
  unsigned long ucs_bits[1024 / (8 * sizeof(unsigned long))];
} ucs_cpu_set_t;

/* ucs/config/types.h */
typedef struct ucs_sock_addr {
  const struct sockaddr *addr;
  socklen_t addrlen;
} ucs_sock_addr_t;

/* Handles (ucp/api/ucp_def.h). */
typedef struct ucp_context *ucp_context_h;
typedef struct ucp_config ucp_config_t;
typedef struct ucp_worker *ucp_worker_h;
typedef struct ucp_ep *ucp_ep_h;
typedef struct ucp_conn_request *ucp_conn_request_h;
typedef struct ucp_address ucp_address_t;
typedef struct ucp_rkey *ucp_rkey_h;
typedef struct ucp_mem *ucp_mem_h;
typedef uint64_t ucp_datatype_t;

typedef void (*ucp_request_init_callback_t)(void *request);
typedef void (*ucp_request_cleanup_callback_t)(void *request);
typedef void (*ucp_send_nbx_callback_t)(void *request, ucs_status_t status,
                                        void *user_data);
typedef void (*ucp_err_handler_cb_t)(void *arg, ucp_ep_h ep,
                                     ucs_status_t status);
/* Callbacks of members the adaptor never sets: placeholders of a
 * function pointer's size. */
typedef void (*ucx_unused_cb)(void);

/* ucp_init's parameters. */
#define UCP_PARAM_FIELD_FEATURES (1ul << 0)
#define UCP_PARAM_FIELD_REQUEST_SIZE (1ul << 1)
#define UCP_PARAM_FIELD_MT_WORKERS_SHARED (1ul << 5)
#define UCP_PARAM_FIELD_ESTIMATED_NUM_EPS (1ul << 6)
#define UCP_PARAM_FIELD_NAME (1ul << 8)
#define UCP_FEATURE_RMA (1ul << 1)
#define UCP_FEATURE_AMO32 (1ul << 2)
#define UCP_FEATURE_AMO64 (1ul << 3)
#define UCP_FEATURE_WAKEUP (1ul << 4)

typedef struct ucp_params {
  uint64_t field_mask;
  uint64_t features;
  size_t request_size;
  ucp_request_init_callback_t request_init;
  ucp_request_cleanup_callback_t request_cleanup;
  uint64_t tag_sender_mask;
  int mt_workers_shared;
  size_t estimated_num_eps;
  size_t estimated_num_ppn;
  const char *name;
} ucp_params_t;

/* The worker. */
#define UCP_WORKER_PARAM_FIELD_THREAD_MODE (1ul << 0)
#define UCP_WORKER_PARAM_FIELD_NAME (1ul << 6)
#define UCP_ENTITY_NAME_MAX 32

typedef struct ucp_worker_params {
  uint64_t field_mask;
  ucs_thread_mode_t thread_mode;
  ucs_cpu_set_t cpu_mask;
  unsigned events;
  void *user_data;
  int event_fd;
  uint64_t flags;
  const char *name;
  size_t am_alignment;
  uint64_t client_id;
} ucp_worker_params_t;

#define UCP_WORKER_ATTR_FIELD_THREAD_MODE (1ul << 0)
#define UCP_WORKER_ATTR_FIELD_ADDRESS (1ul << 1)
#define UCP_WORKER_ATTR_FIELD_ADDRESS_FLAGS (1ul << 2)
#define UCP_WORKER_ADDRESS_FLAG_NET_ONLY (1ul << 0)

typedef struct ucp_worker_attr {
  uint64_t field_mask;
  ucs_thread_mode_t thread_mode;
  uint32_t address_flags;
  ucp_address_t *address;
  size_t address_length;
  size_t max_am_header;
  char name[UCP_ENTITY_NAME_MAX];
  size_t max_debug_string;
} ucp_worker_attr_t;

/* Endpoints. */
#define UCP_EP_PARAM_FIELD_REMOTE_ADDRESS (1ul << 0)
#define UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE (1ul << 1)
#define UCP_EP_PARAM_FIELD_ERR_HANDLER (1ul << 2)
#define UCP_EP_PARAM_FIELD_USER_DATA (1ul << 3)

typedef enum {
  UCP_ERR_HANDLING_MODE_NONE,
  UCP_ERR_HANDLING_MODE_PEER
} ucp_err_handling_mode_t;

typedef struct ucp_err_handler {
  ucp_err_handler_cb_t cb;
  void *arg;
} ucp_err_handler_t;

typedef struct ucp_ep_params {
  uint64_t field_mask;
  const ucp_address_t *address;
  ucp_err_handling_mode_t err_mode;
  ucp_err_handler_t err_handler;
  void *user_data;
  unsigned flags;
  ucs_sock_addr_t sockaddr;
  ucp_conn_request_h conn_request;
  const char *name;
  ucs_sock_addr_t local_sockaddr;
} ucp_ep_params_t;

/* Memory. */
#define UCP_MEM_MAP_PARAM_FIELD_ADDRESS (1ul << 0)
#define UCP_MEM_MAP_PARAM_FIELD_LENGTH (1ul << 1)
#define UCP_MEM_MAP_PARAM_FIELD_FLAGS (1ul << 2)
#define UCP_MEM_MAP_PARAM_FIELD_PROT (1ul << 3)
#define UCP_MEM_MAP_PARAM_FIELD_MEMORY_TYPE (1ul << 4)
#define UCP_MEM_MAP_PROT_LOCAL_READ (1ul << 0)
#define UCP_MEM_MAP_PROT_LOCAL_WRITE (1ul << 1)
#define UCP_MEM_MAP_PROT_REMOTE_READ (1ul << 8)
#define UCP_MEM_MAP_PROT_REMOTE_WRITE (1ul << 9)

typedef struct ucp_mem_map_params {
  uint64_t field_mask;
  void *address;
  size_t length;
  unsigned flags;
  unsigned prot;
  ucs_memory_type_t memory_type;
} ucp_mem_map_params_t;

#define UCP_ATTR_FIELD_MEMORY_TYPES (1ul << 2)

typedef struct ucp_context_attr {
  uint64_t field_mask;
  size_t request_size;
  ucs_thread_mode_t thread_mode;
  uint64_t memory_types;
  char name[UCP_ENTITY_NAME_MAX];
} ucp_context_attr_t;

/* Operations. */
typedef enum {
  UCP_ATOMIC_OP_ADD,
  UCP_ATOMIC_OP_SWAP,
  UCP_ATOMIC_OP_CSWAP,
  UCP_ATOMIC_OP_AND,
  UCP_ATOMIC_OP_OR,
  UCP_ATOMIC_OP_XOR,
  UCP_ATOMIC_OP_LAST
} ucp_atomic_op_t;

#define UCP_OP_ATTR_FIELD_CALLBACK (1ul << 1)
#define UCP_OP_ATTR_FIELD_USER_DATA (1ul << 2)
#define UCP_OP_ATTR_FIELD_DATATYPE (1ul << 3)
#define UCP_OP_ATTR_FIELD_FLAGS (1ul << 4)
#define UCP_OP_ATTR_FIELD_REPLY_BUFFER (1ul << 5)
#define UCP_EP_CLOSE_FLAG_FORCE (1ul << 0)
#define UCP_DATATYPE_CONTIG 0
#define UCP_DATATYPE_SHIFT 3
#define ucp_dt_make_contig(_elem_size)                                         \
  (((ucp_datatype_t)(_elem_size) << UCP_DATATYPE_SHIFT) | UCP_DATATYPE_CONTIG)

typedef struct {
  uint32_t op_attr_mask;
  uint32_t flags;
  void *request;
  union {
    ucp_send_nbx_callback_t send;
    ucx_unused_cb recv;
    ucx_unused_cb recv_stream;
    ucx_unused_cb recv_am;
  } cb;
  ucp_datatype_t datatype;
  void *user_data;
  void *reply_buffer;
  ucs_memory_type_t memory_type;
  union {
    size_t *length;
    void *tag_info;
  } recv_info;
  ucp_mem_h memh;
} ucp_request_param_t;

#endif
