/* symheap adaptor ABI: for authors of device and collective (ccl) adaptors.
 *
 * The core never calls a vendor API.  It talks to a device adaptor (memory,
 * shareable handles, virtual address space, optional multicast and legacy IPC)
 * and to a ccl adaptor (rank, size, allgather, barrier).  Both tables start
 * with abi_version, struct_size and name; members are only ever appended, and
 * the core reads a member only when struct_size covers it, so an adaptor built
 * against an older header keeps working.  The core copies each table into its
 * own full table at registration, putting typed "unsupported" stubs where an
 * optional member is NULL, and refuses a table that lacks a required member,
 * naming it.
 *
 * Threading: the core calls one adaptor context from one thread at a time
 * (a comm belongs to one thread at a time), but several contexts of one
 * adaptor may be live in one process, one per thread-rank.
 */
#ifndef SYMHEAP_ADAPTOR_H
#define SYMHEAP_ADAPTOR_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#include "symheap.h"
#include "symheap_net_adaptor.h" /* the net adaptors' table */

#ifdef __cplusplus
extern "C" {
#endif

/* Versions (docs/architecture.md says when each changes):
 * - SYMHEAP_ADAPTOR_ABI_VERSION: the meaning of the device and ccl tables
 *   and of the host services.  It changes only when a member changes
 *   meaning or moves; appended members do not change it (struct_size tells
 *   them apart: SYMHEAP_HAS_MEMBER).
 * - SYMHEAP_PLUGIN_ABI_MAJOR/MINOR: the plugin entry point; the minor grows
 *   when members are appended to symheap_plugin_t.
 * - SYMHEAP_DEVICE_WINDOW_VERSION (symheap_device.h): the device-side view.
 * - SYMHEAP_VERSION_* (symheap.h): the library's release. */
#define SYMHEAP_ADAPTOR_ABI_VERSION 1

/* Whether a table that says it is struct_size bytes long covers `member`
 * of `type`.  Appended members exist only for tables whose struct_size
 * covers them; both sides of the ABI ask this one question this one way. */
#define SYMHEAP_SIZE_COVERS(size, type, member)                                \
  ((size_t)(size) >= offsetof(type, member) + sizeof(((type *)0)->member))
#define SYMHEAP_HAS_MEMBER(table, type, member)                                \
  ((table) != NULL && SYMHEAP_SIZE_COVERS((table)->struct_size, type, member))

/* How a plugin exports its entry symbol (the library is built with
 * -fvisibility=hidden, and a plugin should be too). */
#define SYMHEAP_PLUGIN_EXPORT __attribute__((visibility("default")))

/* The entry of an adaptor that is built either way: as a plugin
 * (-DSYMHEAP_PLUGIN_BUILD, the exported symheap_plugin_v1) or linked into
 * libsymheap as a built-in (symheap_builtin_<id>, registered the same way). */
#ifdef SYMHEAP_PLUGIN_BUILD
#define SYMHEAP_PLUGIN_ENTRY(id)                                               \
  SYMHEAP_PLUGIN_EXPORT const struct symheap_plugin symheap_plugin_v1
#else
#define SYMHEAP_PLUGIN_ENTRY(id)                                               \
  const struct symheap_plugin symheap_builtin_##id
#endif

/* Log levels for symheap_host_services_t.log. */
#define SYMHEAP_LOG_NONE 0
#define SYMHEAP_LOG_WARN 1
#define SYMHEAP_LOG_INFO 2
#define SYMHEAP_LOG_TRACE 3

struct symheap_param;

/* What the core lends an adaptor, so adaptors never link to core internals
 * or read variables themselves.  An adaptor uses nothing of the core but
 * this table (and the public headers): that is what lets any in-tree
 * adaptor be copied out of the tree and built as a plugin. */
typedef struct symheap_host_services {
  uint32_t abi_version;
  uint32_t struct_size;
  /* Log through the core's logger (rank prefix, SYMHEAP_DEBUG filter). */
  void (*log)(int level, const char *fmt, ...);
  /* Record a failure for symheap_last_error() (vendor text goes here) and
   * return r, so an adaptor can write `return svc->error(R, "...")`. */
  symheap_result_t (*error)(symheap_result_t r, const char *fmt, ...);
  /* The environment as the core sees it (tests may override). */
  const char *(*getenv)(const char *name);
  /* -- Appended (check with SYMHEAP_HAS_MEMBER before use). -- */
  /* The thread's current error message ("" when none). */
  const char *(*error_message)(void);
  /* Prefix the current message with context ("<context>: <message>") and
   * return r: `return svc->error_context(r, "exporting %s", what);`. */
  symheap_result_t (*error_context)(symheap_result_t r, const char *fmt, ...);
  /* Configuration an adaptor declares (libfabric's fi_param_define): once
   * declared, the variable is listed by `symheap-info -e` under `owner`,
   * validated at every comm init (a malformed value fails it, naming the
   * variable), and read with the getters below.  Declaring the same variable
   * again with the same type is a no-op; clashing with a variable someone
   * else declared is SYMHEAP_ERR_INVALID_ARG.  Declare from plugin init. */
  symheap_result_t (*param_define)(const char *owner,
                                   const struct symheap_param *param);
  /* Validated value, or the declared default (*value NULL: unset and no
   * default).  Getters work on every declared variable, the core's too
   * (SYMHEAP_DISABLE_MULTICAST, ...).  INVALID_ARG for a malformed value or
   * an undeclared variable, naming it. */
  symheap_result_t (*param_get_string)(const char *name, const char **value);
  symheap_result_t (*param_get_int)(const char *name, long *value);
  symheap_result_t (*param_get_bool)(const char *name, int *value);
  /* The index of the value among the declared choices. */
  symheap_result_t (*param_get_choice)(const char *name, int *index);
  /* Nonzero when the user set the variable (to anything non-empty). */
  int (*param_is_set)(const char *name);
  /* Monotonic clock, nanoseconds (for deadlines: SYMHEAP_TIMEOUT_MS). */
  uint64_t (*now_ns)(void);
  /* -- Appended (a ccl adaptor's own waits). -- */
  /* One turn of the work the core does while any of its waits waits: the
   * open net adaptors with manual progress are progressed (a peer's get,
   * atomic or put_signal on this rank completes only when this rank
   * progresses: tcp;ofi_rxm, the test adaptor "loop") and their staged
   * puts applied.  A ccl adaptor that waits in a loop of its own (polling
   * a vendor's nonblocking collective, as the MPI ccl polls MPI_Test) calls
   * it on every turn of that loop, so that a peer waiting on this rank's
   * net progress is served meanwhile.  Never blocks: an engine another
   * thread is progressing is skipped.  Nonzero: poll again without
   * sleeping (an engine had work lately, another thread holds one, staged
   * puts are pending, or an engine has no descriptor a sleep could be
   * woken by: then it stays nonzero for the whole wait, and the caller
   * should still yield now and then); 0: nothing to do (nap as before).
   * Any thread, with or without a comm; 0 at once when no such engine is
   * open. */
  int (*wait_progress)(void);
} symheap_host_services_t;

/* Largest error message symheap_last_error() keeps. */
#define SYMHEAP_ERROR_MAX 1024

/* Run `stmt` (cleanup that may record errors of its own), then put back
 * the message recorded before it, so the caller reports the first failure,
 * not the cleanup's. */
#define SYMHEAP_KEEP_ERROR(svc, stmt)                                          \
  do {                                                                         \
    char keep_error_[SYMHEAP_ERROR_MAX];                                       \
    snprintf(keep_error_, sizeof keep_error_, "%s", (svc)->error_message());   \
    stmt;                                                                      \
    (void)(svc)->error(SYMHEAP_SUCCESS, "%s", keep_error_);                    \
  } while (0)

/* A configuration variable an adaptor declares (param_define). */
typedef enum {
  SYMHEAP_PARAM_STRING = 0,
  SYMHEAP_PARAM_INT = 1,    /* decimal, within [min, max] */
  SYMHEAP_PARAM_BOOL = 2,   /* 0 or 1 */
  SYMHEAP_PARAM_CHOICE = 3, /* one of `choices`, case-insensitive */
} symheap_param_type_t;

typedef struct symheap_param {
  uint32_t struct_size; /* sizeof(symheap_param_t), filled by the adaptor */
  uint32_t type;        /* symheap_param_type_t */
  const char *name;     /* SYMHEAP_<OWNER>_<WHAT>: upper case, digits, '_' */
  const char *def;      /* default value as text; NULL: unset by default */
  long min, max;        /* SYMHEAP_PARAM_INT */
  const char *choices;  /* SYMHEAP_PARAM_CHOICE: "a|b|c" */
  const char *help;     /* one sentence or two, for symheap-info -e */
} symheap_param_t;

/* Declare a table of variables for `owner`, from a plugin's init: the
 * first refusal is returned (its message names the variable). */
static inline symheap_result_t
symheap_params_define(const symheap_host_services_t *svc, const char *owner,
                      const symheap_param_t *params, size_t count) {
  for (size_t i = 0; i < count; i++) {
    symheap_result_t r = svc->param_define(owner, &params[i]);
    if (r != SYMHEAP_SUCCESS)
      return r;
  }
  return SYMHEAP_SUCCESS;
}

/* An adaptor-defined physical-memory handle (a CUmemGenericAllocationHandle,
 * a file descriptor, an index...).  Zero is never a valid handle. */
typedef uint64_t symheap_mem_handle_t;

/* How a shareable handle travels between ranks. */
typedef enum {
  SYMHEAP_HANDLE_NONE = 0,
  SYMHEAP_HANDLE_FD = 1,    /* a file descriptor, passed over a Unix socket */
  SYMHEAP_HANDLE_BYTES = 2, /* opaque bytes, passed with the ccl allgather */
} symheap_handle_kind_t;

#define SYMHEAP_SHAREABLE_MAX_BYTES 128
typedef struct {
  uint32_t kind; /* symheap_handle_kind_t */
  int32_t fd;    /* SYMHEAP_HANDLE_FD; -1 otherwise */
  uint32_t nbytes;
  unsigned char bytes[SYMHEAP_SHAREABLE_MAX_BYTES]; /* SYMHEAP_HANDLE_BYTES */
} symheap_shareable_t;

/* Capability bits. */
#define SYMHEAP_CAP_VMM 0x1u       /* physical memory + VA reserve/map */
#define SYMHEAP_CAP_MULTICAST 0x2u /* multicast ops present and usable */
#define SYMHEAP_CAP_IPC 0x4u       /* legacy per-peer IPC fallback */
#define SYMHEAP_CAP_HOST_ACCESS                                                \
  0x8u /* the CPU can load/store mapped memory                                 \
        */
/* map() maps part of an allocation (a nonzero offset, or less than all of
 * it).  Without it (the CUDA driver and the HIP runtime today), the core maps
 * whole allocations and places a window inside its mapping; every rank's
 * allocation behind a window must then have the same size. */
#define SYMHEAP_CAP_MAP_PARTIAL 0x10u

/* What query() fills.  The core sets struct_size to its sizeof and zeroes
 * the rest before the call; the adaptor fills the members and leaves
 * struct_size alone. */
typedef struct {
  uint32_t struct_size;
  uint32_t caps;         /* SYMHEAP_CAP_* */
  uint32_t handle_kinds; /* bit (1u << symheap_handle_kind_t) per kind */
  uint32_t reserved0;
  size_t granularity; /* every map offset and size is a multiple */
  size_t recommended_granularity;
  size_t multicast_granularity; /* 0 without multicast */
  char device_name[64];         /* e.g. "NVIDIA H200 (device 1)", "cpu" */
} symheap_device_caps_t;

/* What a device adaptor learns about its rank at init (struct_size: the
 * core's sizeof). */
typedef struct {
  uint32_t struct_size;
  int32_t rank, nranks;
  int32_t local_rank, local_nranks;
} symheap_device_init_t;

typedef struct symheap_device_ops {
  uint32_t abi_version; /* SYMHEAP_ADAPTOR_ABI_VERSION */
  uint32_t struct_size; /* sizeof(symheap_device_ops) as the adaptor saw it */
  const char *name;     /* what SYMHEAP_DEVICE=<name> selects */

  /* Required.  Cheap probe: nonzero when the adaptor can run here (driver
   * present, a device visible).  When it cannot, write why into `why`.  Must
   * not block, must not allocate device resources. */
  int (*available)(const symheap_host_services_t *svc, char *why, size_t len);
  /* Required.  Per-comm context; may bind a device to the calling thread. */
  symheap_result_t (*init)(const symheap_host_services_t *svc,
                           const symheap_device_init_t *args, void **ctx);
  /* Required.  Releases the context; never fails. */
  void (*fini)(void *ctx);
  /* Required. */
  symheap_result_t (*query)(void *ctx, symheap_device_caps_t *caps);
  /* Required.  Physical memory of `size` bytes (a multiple of granularity). */
  symheap_result_t (*mem_create)(void *ctx, size_t size,
                                 symheap_mem_handle_t *h);
  /* Required.  Drops the handle; memory lives on while it is mapped. */
  symheap_result_t (*mem_release)(void *ctx, symheap_mem_handle_t h);
  /* Required.  A shareable handle of the given kind, owned by the caller. */
  symheap_result_t (*mem_export)(void *ctx, symheap_mem_handle_t h,
                                 uint32_t kind, symheap_shareable_t *out);
  /* Required.  Import a peer's handle.  For SYMHEAP_HANDLE_FD the adaptor
   * owns in->fd afterwards, whether or not the import succeeds. */
  symheap_result_t (*mem_import)(void *ctx, const symheap_shareable_t *in,
                                 symheap_mem_handle_t *h);
  /* Required.  Reserve inaccessible VA; `align` is a power of two. */
  symheap_result_t (*va_reserve)(void *ctx, size_t size, size_t align,
                                 void **va);
  /* Required.  Return a reservation (everything in it already unmapped). */
  symheap_result_t (*va_free)(void *ctx, void *va, size_t size);
  /* Required.  Map [offset, offset+size) of h at va, inside a reservation. */
  symheap_result_t (*map)(void *ctx, void *va, size_t size,
                          symheap_mem_handle_t h, size_t offset);
  /* Required.  Unmap; the range stays reserved. */
  symheap_result_t (*unmap)(void *ctx, void *va, size_t size);
  /* Required.  Make a mapped range readable and writable by this rank's
   * device (and the CPU where SYMHEAP_CAP_HOST_ACCESS). */
  symheap_result_t (*set_access)(void *ctx, void *va, size_t size);

  /* Optional (NULL: only memory from symheap_mem_alloc registers).  Find the
   * allocation behind a pointer the core did not allocate; returns a handle
   * the caller releases with mem_release, and the allocation's extent. */
  symheap_result_t (*mem_retain)(void *ctx, void *ptr, symheap_mem_handle_t *h,
                                 void **alloc_base, size_t *alloc_size);

  /* Optional multicast (NULL: SYMHEAP_WINDOW_MULTICAST is UNSUPPORTED).
   * The core calls them in this order: rank 0 mc_create, export with
   * mem_export, peers mem_import; every rank mc_add_device; agreement; every
   * rank mc_bind; va_reserve, map (with the multicast handle) and
   * set_access.  Teardown, in reverse: unmap, va_free, mc_unbind,
   * mem_release.  A multicast handle is a symheap_mem_handle_t like any
   * other. */
  symheap_result_t (*mc_create)(void *ctx, size_t size, int ndevices,
                                symheap_mem_handle_t *mc);
  symheap_result_t (*mc_add_device)(void *ctx, symheap_mem_handle_t mc);
  symheap_result_t (*mc_bind)(void *ctx, symheap_mem_handle_t mc,
                              size_t mc_offset, symheap_mem_handle_t mem,
                              size_t mem_offset, size_t size);
  symheap_result_t (*mc_unbind)(void *ctx, symheap_mem_handle_t mc,
                                size_t mc_offset, size_t size);

  /* Optional legacy IPC fallback for memory that is not VMM (NULL: such
   * memory is refused).  ipc_get describes [ptr, ptr+size) for peers;
   * ipc_open maps a peer's description and returns its address; ipc_close
   * undoes ipc_open. */
  symheap_result_t (*ipc_get)(void *ctx, void *ptr, size_t size,
                              symheap_shareable_t *out);
  symheap_result_t (*ipc_open)(void *ctx, const symheap_shareable_t *in,
                               void **ptr);
  symheap_result_t (*ipc_close)(void *ctx, void *ptr);

  /* -- Appended optional members: an adaptor whose struct_size does not
   * cover one has it NULL. -- */
  /* Optional.  Set [va, va+size) of this rank's own mapped, accessible memory
   * to zero and return once it is done.  The core clears the comm pad with it
   * at init and a window's signal slot when the window goes.  NULL: the pad
   * cannot be cleared, so views carry no pad (no device signals, no
   * collectives) and the comm's log says so. */
  symheap_result_t (*mem_zero)(void *ctx, void *va, size_t size);
  /* Optional.  SYMHEAP_SUCCESS unless the device runtime is capturing
   * work into a graph in a way this adaptor can see; then an error
   * (SYMHEAP_ERR_UNSUPPORTED) saying so.  The core asks before every call
   * that allocates, maps or unmaps, and refuses the call on every rank. */
  symheap_result_t (*capture_check)(void *ctx);
  /* Optional.  A dma-buf file descriptor covering [ptr, ptr+size) of
   * this rank's own memory, so that an RDMA device can register it
   * (ibv_reg_dmabuf_mr); *offset is where ptr lies in the dma-buf.  The
   * caller closes the descriptor.  NULL: memory the CPU cannot reach
   * (no SYMHEAP_CAP_HOST_ACCESS) cannot be registered for RDMA. */
  symheap_result_t (*dmabuf_export)(void *ctx, void *ptr, size_t size, int *fd,
                                    uint64_t *offset);
  /* Optional, all three or none (the device host proxy, docs/device-api.md).
   * host_alloc: size bytes of page-locked host memory that the device can
   * read and write, zeroed: *host for the CPU, *dev for kernels (the same
   * address where they share one).  host_free undoes it.  copy_to_host:
   * size bytes from dev_src (device memory of this rank's device, or host
   * memory it maps) into host memory dst, returning once they are there;
   * called from a thread of the core's own (bind the device's context on
   * it).  NULL: kernels cannot reach other hosts' ranks through the proxy. */
  symheap_result_t (*host_alloc)(void *ctx, size_t size, void **host,
                                 void **dev);
  symheap_result_t (*host_free)(void *ctx, void *host);
  symheap_result_t (*copy_to_host)(void *ctx, void *dst, const void *dev_src,
                                   size_t size);
  /* -- Appended (issue 27, staging): an adaptor whose struct_size does not
   * cover it has it NULL. -- */
  /* Optional (needs host_alloc).  size bytes from host memory src into
   * dev_dst (device memory of this rank's device), returning once they are
   * there; called from the core's threads (the progress and proxy threads
   * too: bind the device's context on it), never on a stream a kernel may
   * be waiting on.  The core uses it to land other hosts' puts that a net
   * adaptor without SYMHEAP_NET_CAP_HMEM staged in host memory
   * (docs/network.md, "Staging"); staging needs copy_to_host too (peers'
   * gets and the read of their atomics).  NULL: such device windows cannot
   * be reached from other hosts. */
  symheap_result_t (*copy_from_host)(void *ctx, void *dev_dst, const void *src,
                                     size_t size);
} symheap_device_ops;

/* The collective runtime a comm rides on.  Every call is collective over the
 * comm's ranks and must give up after timeout_ms with SYMHEAP_ERR_TIMEOUT, or
 * return SYMHEAP_ERR_REMOTE (naming the rank, through svc->error) when a peer
 * is gone.  After a failure the core treats the context as broken. */
struct symheap_vendor_window;
struct symheap_path_env;
typedef struct symheap_ccl_ops {
  uint32_t abi_version;
  uint32_t struct_size;
  const char *name;
  /* Required. */
  int (*rank)(void *ctx);
  int (*size)(void *ctx);
  /* Required.  Every rank passes `bytes` bytes; out receives size*bytes,
   * rank r's contribution at r*bytes. */
  symheap_result_t (*allgather)(void *ctx, const void *in, void *out,
                                size_t bytes, int timeout_ms);
  /* Optional (NULL: the core uses an empty allgather). */
  symheap_result_t (*barrier)(void *ctx, int timeout_ms);
  /* Optional: release the context when the comm is destroyed (NULL when the
   * caller owns the context). */
  void (*fini)(void *ctx);
  /* -- Appended optional members. -- */
  /* Optional, both or neither: a vendor window path, which the core
   * uses instead of its own flat VA when SYMHEAP_WINDOW_PATH=ccl (the
   * built-in NCCL path, SYMHEAP_WINDOW_PATH=nccl, has the same shape).
   * window_register is collective like symheap_window_register: every rank
   * calls it, in the same order, with its own [ptr, ptr+size) (the same size
   * everywhere), and on success fills *out so that rank p's copy of the
   * window starts at out->flat_base + p * out->stride, loadable and storable
   * from every rank of the comm.  The core then agrees with the other ranks;
   * where another rank failed, a rank whose call succeeded gets
   * window_deregister(handle).  window_deregister is collective too, in
   * deregistration order. */
  symheap_result_t (*window_register)(void *ctx, void *ptr, size_t size,
                                      struct symheap_vendor_window *out);
  symheap_result_t (*window_deregister)(void *ctx, void *handle);
  /* Optional: join the job a launcher started, this process's place in it
   * read from the launcher's environment, within timeout_ms, and make a
   * context (released by fini).  A plugin's ccl with `open` is what
   * SYMHEAP_CCL=<its name> makes symheap_comm_init_env ride on. */
  symheap_result_t (*open)(const symheap_host_services_t *svc, int timeout_ms,
                           void **ctx);
  /* Optional: split the context, collectively over its ranks, as
   * MPI_Comm_split does: ranks with the same color >= 0 form a new context
   * ordered by (key, rank); a rank with color < 0 gets *child NULL.
   * symheap_comm_split of a comm on this ccl rides on it; the new contexts
   * are released with fini, so a ccl with split has a fini.  Without
   * split, a comm on this ccl splits over symheap's own socket bootstrap,
   * which reaches one host only. */
  symheap_result_t (*split)(void *ctx, int color, int key, int timeout_ms,
                            void **child);
  /* Optional: this runtime's window path for a comm made on another ccl
   * (SYMHEAP_WINDOW_PATH=<name>): collective over the comm's ranks, which
   * agree through env->agree; *ctx is then what window_register and
   * window_deregister take, until path_close. */
  symheap_result_t (*path_open)(const symheap_host_services_t *svc,
                                const struct symheap_path_env *env,
                                void **ctx);
  void (*path_close)(void *ctx);
  /* Optional: a context over a communicator of this runtime that the caller
   * made (symheap_comm_init_nccl); fini releases the context, never the
   * caller's communicator. */
  symheap_result_t (*wrap)(const symheap_host_services_t *svc,
                           void *vendor_comm, void **ctx);
} symheap_ccl_ops;

/* The MPI ccl adaptor's entry for symheap_comm_init_env under an MPI
 * launcher: libsymheap-ccl-mpi.so exports it under this name, and libsymheap,
 * which never links MPI, finds it with dlsym.  It joins MPI_COMM_WORLD
 * (initialising MPI if the program did not) and hands back the ccl and its
 * context.  Declared here once so that both sides are held to one type. */
#define SYMHEAP_CCL_MPI_OPEN_WORLD "symheap_ccl_mpi_open_world"
typedef symheap_result_t
symheap_ccl_open_world_fn(const symheap_host_services_t *svc,
                          const symheap_ccl_ops **ops, void **ctx);

/* What a window path's path_open learns of the comm it serves. */
typedef struct symheap_path_env {
  uint32_t struct_size;
  int32_t rank, nranks;
  int32_t local_nranks, nhosts;
  const char *device; /* the comm's device adaptor */
  /* One agreement among the comm's ranks: each passes its status and `len`
   * bytes (at most 256, the same len on every rank); SUCCESS only when every
   * rank succeeded, with every rank's bytes in `all` (nranks * len, or
   * NULL). */
  symheap_result_t (*agree)(void *arg, symheap_result_t local,
                            const void *payload, size_t len, void *all);
  void *arg;
} symheap_path_env_t;

/* Teardown goes on past a failure and reports the first: `first` keeps the
 * first result that is not SUCCESS of the calls put through here. */
#define SYMHEAP_KEEP_FIRST(first, call)                                        \
  do {                                                                         \
    symheap_result_t keep_first_ = (call);                                     \
    if (keep_first_ != SYMHEAP_SUCCESS && (first) == SYMHEAP_SUCCESS)          \
      (first) = keep_first_;                                                   \
  } while (0)

/* A window as a vendor window path registered it. */
typedef struct symheap_vendor_window {
  void *handle;    /* the vendor's window, handed back to window_deregister */
  void *flat_base; /* rank 0's copy of the window's first byte */
  uint64_t stride; /* bytes between consecutive ranks' copies */
} symheap_vendor_window_t;

/* --- Plugins ---------------------------------------------------------------
 * A plugin is a shared object that exports one symbol, symheap_plugin_v1, of
 * type symheap_plugin_t.  SYMHEAP_PLUGIN=name-or-path[,more] loads them (a
 * bare name foo is libsymheap-plugin-foo.so, searched in SYMHEAP_PLUGIN_PATH
 * and then in the directory libsymheap was loaded from).  A plugin provides a
 * complete device adaptor (a new vendor), a ccl adaptor, and/or hooks over an
 * existing device adaptor.  ABI rules: the major version changes only when a
 * member changes meaning; members are only appended, and the core reads a
 * member only when struct_size covers it. */
#define SYMHEAP_PLUGIN_ABI_MAJOR 1
#define SYMHEAP_PLUGIN_ABI_MINOR 1
#define SYMHEAP_PLUGIN_SYMBOL "symheap_plugin_v1"

/* What a hook sees of the adaptor below it (the base adaptor, or the hooks of
 * a plugin loaded earlier): its complete table and its context.  A hook calls
 * below->ops->op(below->ctx, ...) to fall through. */
typedef struct {
  const symheap_device_ops *ops;
  void *ctx;
} symheap_hook_below_t;

/* Overrides of a device adaptor's operations; each member may be NULL
 * (the call goes to the adaptor below unchanged).  Each takes what the
 * device operation takes, with `below` first. */
typedef struct symheap_device_hooks {
  uint32_t struct_size; /* sizeof(symheap_device_hooks) */
  /* The adaptor these hooks wrap: a name, or "*" for whichever a comm uses */
  const char *target;
  /* the flat-VA map */
  symheap_result_t (*va_reserve)(const symheap_hook_below_t *below, size_t size,
                                 size_t align, void **va);
  symheap_result_t (*va_free)(const symheap_hook_below_t *below, void *va,
                              size_t size);
  symheap_result_t (*map)(const symheap_hook_below_t *below, void *va,
                          size_t size, symheap_mem_handle_t h, size_t offset);
  symheap_result_t (*unmap)(const symheap_hook_below_t *below, void *va,
                            size_t size);
  symheap_result_t (*set_access)(const symheap_hook_below_t *below, void *va,
                                 size_t size);
  /* the multicast bind (mem_release also releases multicast handles) */
  symheap_result_t (*mc_create)(const symheap_hook_below_t *below, size_t size,
                                int ndevices, symheap_mem_handle_t *mc);
  symheap_result_t (*mc_add_device)(const symheap_hook_below_t *below,
                                    symheap_mem_handle_t mc);
  symheap_result_t (*mc_bind)(const symheap_hook_below_t *below,
                              symheap_mem_handle_t mc, size_t mc_offset,
                              symheap_mem_handle_t mem, size_t mem_offset,
                              size_t size);
  symheap_result_t (*mc_unbind)(const symheap_hook_below_t *below,
                                symheap_mem_handle_t mc, size_t mc_offset,
                                size_t size);
  symheap_result_t (*mem_release)(const symheap_hook_below_t *below,
                                  symheap_mem_handle_t h);
  /* shareable handles */
  symheap_result_t (*mem_export)(const symheap_hook_below_t *below,
                                 symheap_mem_handle_t h, uint32_t kind,
                                 symheap_shareable_t *out);
  symheap_result_t (*mem_import)(const symheap_hook_below_t *below,
                                 const symheap_shareable_t *in,
                                 symheap_mem_handle_t *h);
  /* v1 ends here */
} symheap_device_hooks;

typedef struct symheap_plugin {
  uint32_t abi_major;   /* SYMHEAP_PLUGIN_ABI_MAJOR */
  uint32_t abi_minor;   /* SYMHEAP_PLUGIN_ABI_MINOR */
  uint32_t struct_size; /* sizeof(symheap_plugin_t) */
  const char *name;
  /* Required.  Once, right after loading; a failure refuses the plugin. */
  symheap_result_t (*init)(const symheap_host_services_t *svc);
  /* Required.  Once, at process exit. */
  void (*fini)(void);
  /* What it provides; at least one is set. */
  const symheap_device_ops *device; /* registered like a built-in adaptor */
  const symheap_ccl_ops *ccl;
  const symheap_device_hooks *hooks;
  /* v1 ends here */
  /* -- Appended (minor 1) -- */
  const symheap_net_ops *net; /* registered like a built-in net adaptor */
} symheap_plugin_t;

/* The fields every plugin entry starts with: the ABI the plugin is built
 * against and the size of the entry it fills, so that the core can tell
 * which members it may read.  An entry written out in full begins
 *   { SYMHEAP_PLUGIN_ABI_FIELDS, .name = "acme", .init = ..., ... } */
#define SYMHEAP_PLUGIN_ABI_FIELDS                                              \
  .abi_major = SYMHEAP_PLUGIN_ABI_MAJOR,                                       \
  .abi_minor = SYMHEAP_PLUGIN_ABI_MINOR,                                       \
  .struct_size = sizeof(symheap_plugin_t)

/* The whole entry of a plugin whose init only keeps the services table and
 * whose fini has nothing to do, which is what most plugins need:
 *   static const symheap_host_services_t *svc;
 *   ...
 *   SYMHEAP_PLUGIN_DEFINE(acme, svc, .device = &acme_ops);
 * exports symheap_plugin_v1 named "acme" (the id as a string), whose init
 * stores the services in svc.  The arguments after svc say what the plugin
 * provides (.device, .ccl, .hooks, .net; at least one).  A plugin whose init
 * must check or set up something writes its entry out instead, starting with
 * SYMHEAP_PLUGIN_ABI_FIELDS. */
#define SYMHEAP_PLUGIN_DEFINE(id, svc_var, ...)                                \
  static symheap_result_t symheap__plugin_init_##id(                           \
      const symheap_host_services_t *symheap__svc) {                           \
    svc_var = symheap__svc;                                                    \
    return SYMHEAP_SUCCESS;                                                    \
  }                                                                            \
  static void symheap__plugin_fini_##id(void) {}                               \
  SYMHEAP_PLUGIN_EXPORT const symheap_plugin_t symheap_plugin_v1 = {           \
      SYMHEAP_PLUGIN_ABI_FIELDS,                                               \
      .name = #id,                                                             \
      .init = symheap__plugin_init_##id,                                       \
      .fini = symheap__plugin_fini_##id,                                       \
      __VA_ARGS__}

/* The services the core lends adaptors, for code built on symheap outside
 * the core (the CUDA collectives library, plugins): errors recorded through
 * it are what symheap_last_error() returns. */
const symheap_host_services_t *symheap_host_services(void);

/* Make a device adaptor selectable by name (SYMHEAP_DEVICE=<name>) in this
 * process.  The table is copied; its name must be unique. */
symheap_result_t symheap_register_device_adaptor(const symheap_device_ops *ops);
/* Make a net adaptor selectable by name (SYMHEAP_NET=<name>) in this
 * process.  The table is copied; its name must be unique. */
symheap_result_t symheap_register_net_adaptor(const symheap_net_ops *ops);

#ifdef __cplusplus
}
#endif
#endif /* SYMHEAP_ADAPTOR_H */
