/* What each CUDA VMM step of a 2-rank registration costs on this machine, so
 * symheap's registration path can be designed around it.  Two processes (one
 * per GPU) each export their memory as a file descriptor, pass it over a
 * socketpair, import, reserve, map both chunks and set access, in several
 * variants; every step is timed, median of 15.  Each variant runs with the
 * ranks concurrent and with rank 1 idle (to see driver serialisation).
 * Build and run on a GPU machine:
 *   cc -O2 -I/usr/local/cuda/include bench/vmm_costs.c -o vmm_costs -lcuda
 *   ./vmm_costs
 * Creates no multicast object. */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CK(x)                                                                  \
  do {                                                                         \
    CUresult e_ = (x);                                                         \
    if (e_ != CUDA_SUCCESS) {                                                  \
      const char *s_;                                                          \
      cuGetErrorName(e_, &s_);                                                 \
      fprintf(stderr, "%s: %s\n", #x, s_);                                     \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}
static int cmpd(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}
static double med(double *v, int n) {
  qsort(v, n, sizeof *v, cmpd);
  return v[n / 2];
}

static void send_fd(int s, int fd) {
  char b = 0, ctl[CMSG_SPACE(sizeof(int))];
  struct iovec io = {&b, 1};
  struct msghdr m = {0};
  m.msg_iov = &io;
  m.msg_iovlen = 1;
  m.msg_control = ctl;
  m.msg_controllen = sizeof ctl;
  struct cmsghdr *c = CMSG_FIRSTHDR(&m);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  memcpy(CMSG_DATA(c), &fd, sizeof fd);
  if (sendmsg(s, &m, 0) != 1)
    exit(2);
}
static int recv_fd(int s) {
  char b, ctl[CMSG_SPACE(sizeof(int))];
  struct iovec io = {&b, 1};
  struct msghdr m = {0};
  m.msg_iov = &io;
  m.msg_iovlen = 1;
  m.msg_control = ctl;
  m.msg_controllen = sizeof ctl;
  if (recvmsg(s, &m, 0) != 1)
    exit(2);
  int fd;
  memcpy(&fd, CMSG_DATA(CMSG_FIRSTHDR(&m)), sizeof fd);
  return fd;
}
static void sync_peer(int s) {
  char b = 1;
  if (write(s, &b, 1) != 1 || read(s, &b, 1) != 1)
    exit(2);
}

enum { V_WHOLE, V_EXPORT_CACHED, NV };
static const char *vname[] = {"set access once over both chunks",
                              "exported fd cached (dup only)"};

/* Map the peer's `bytes` and ours into a range that stays mapped while the
 * measurements run: does an existing peer mapping make the next cheaper? */
static void anchor(int rank, int s, CUdevice dev, size_t bytes, int repeat) {
  CUmemAllocationProp p = {0};
  p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  p.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  p.location.id = dev;
  CUmemGenericAllocationHandle h, ph;
  size_t phys = repeat ? (2u << 20) : bytes;
  CK(cuMemCreate(&h, phys, &p, 0));
  int fd;
  CK(cuMemExportToShareableHandle(&fd, h,
                                  CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  send_fd(s, fd);
  close(fd);
  int pfd = recv_fd(s);
  CK(cuMemImportFromShareableHandle(&ph, (void *)(uintptr_t)pfd,
                                    CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
  close(pfd);
  CUdeviceptr va;
  CK(cuMemAddressReserve(&va, 2 * bytes, 0, 0, 0));
  for (size_t o = 0; o < bytes; o += phys) {
    CK(cuMemMap(va + o, phys, 0, rank == 0 ? h : ph, 0));
    CK(cuMemMap(va + bytes + o, phys, 0, rank == 1 ? h : ph, 0));
  }
  CUmemAccessDesc d = {{CU_MEM_LOCATION_TYPE_DEVICE, dev},
                       CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
  double t = now_ms();
  CK(cuMemSetAccess(va, 2 * bytes, &d, 1));
  if (rank == 0)
    printf("anchor of %zu MiB per rank%s mapped (set access %.3f ms)\n",
           bytes >> 20, repeat ? " (one 2 MiB chunk repeated)" : "",
           now_ms() - t);
  sync_peer(s);
}

static int anchor_repeat;
static void rank_main(int rank, int s, size_t size, int busy_peer,
                      size_t anchor_bytes) {
  CUdevice dev;
  CUcontext ctx;
  CK(cuInit(0));
  CK(cuDeviceGet(&dev, rank));
  CK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CK(cuCtxSetCurrent(ctx));
  if (anchor_bytes)
    anchor(rank, s, dev, anchor_bytes, anchor_repeat);
  CUmemAllocationProp p = {0};
  p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  p.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  p.location.id = dev;
  CUmemGenericAllocationHandle h;
  CK(cuMemCreate(&h, size, &p, 0));
  int cached_fd;
  CK(cuMemExportToShareableHandle(&cached_fd, h,
                                  CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  enum { N = 15 };
  for (int v = 0; v < NV; v++) {
    double t_exp[N], t_imp[N], t_res[N], t_map[N], t_acc[N], t_tot[N], t_un[N];
    for (int it = 0; it < N; it++) {
      sync_peer(s);
      int active = busy_peer || rank == 0;
      if (!active) { /* idle peer: trade descriptors, make no driver call */
        int fd = dup(cached_fd);
        send_fd(s, fd);
        close(fd);
        close(recv_fd(s));
        sync_peer(s);
        continue;
      }
      double t0 = now_ms();
      int fd;
      if (v == V_EXPORT_CACHED)
        fd = dup(cached_fd);
      else
        CK(cuMemExportToShareableHandle(
            &fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
      double t1 = now_ms();
      send_fd(s, fd);
      close(fd);
      int pfd = recv_fd(s);
      double t2 = now_ms();
      CUmemGenericAllocationHandle ph;
      CK(cuMemImportFromShareableHandle(
          &ph, (void *)(uintptr_t)pfd,
          CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
      close(pfd);
      double t3 = now_ms();
      CUdeviceptr va;
      CK(cuMemAddressReserve(&va, 2 * size, size >= (1u << 30) ? (1u << 30) : 0,
                             0, 0));
      double t4 = now_ms();
      CUmemAccessDesc d = {{CU_MEM_LOCATION_TYPE_DEVICE, dev},
                           CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
      double acc = 0;
      for (int r = 0; r < 2; r++) {
        CK(cuMemMap(va + r * size, size, 0, r == rank ? h : ph, 0));
      }
      double t5 = now_ms();
      CK(cuMemSetAccess(va, 2 * size, &d, 1));
      acc = now_ms() - t5;
      CK(cuMemRelease(ph));
      double t6 = now_ms();
      for (int r = 0; r < 2; r++)
        CK(cuMemUnmap(va + r * size, size));
      CK(cuMemAddressFree(va, 2 * size));
      double t7 = now_ms();
      t_exp[it] = t1 - t0;
      t_imp[it] = t3 - t2;
      t_res[it] = t4 - t3;
      t_map[it] = t5 - t4;
      t_acc[it] = acc;
      t_tot[it] = t6 - t0;
      t_un[it] = t7 - t6;
      sync_peer(s);
    }
    if (rank == 0)
      printf(
          "%-8zu %-5s %-6zu %-38s export %6.3f import %6.3f reserve %6.3f map "
          "%6.3f access %6.3f | total %6.3f | unmap+free %6.3f ms\n",
          size >> 20, busy_peer ? "both" : "alone", anchor_bytes >> 20,
          vname[v], med(t_exp, N), med(t_imp, N), med(t_res, N), med(t_map, N),
          med(t_acc, N), med(t_tot, N), med(t_un, N));
  }
  close(cached_fd);
  CK(cuMemRelease(h));
}

int main(int argc, char **argv) {
  size_t sizes[] = {2u << 20, 64u << 20, 1u << 30, 256u << 20};
  /* argv[1]: MiB of an anchor mapping kept during the run (0: none);
   * argv[2]: "busy" (both ranks only) or "repeat" (both ranks only, anchor
   * made of one 2 MiB chunk mapped again and again) */
  size_t anchor_bytes = argc > 1 ? strtoull(argv[1], NULL, 0) << 20 : 0;
  int only_busy = argc > 2;
  anchor_repeat = argc > 2 && strcmp(argv[2], "repeat") == 0;
  printf("MiB/rank ranks anchorMiB variant: median ms of 15 (rank 0)\n");
  for (int busy = 1; busy >= (only_busy ? 1 : 0); busy--)
    for (int i = 0; i < 4; i++) {
      /* CUDA is not fork-safe: both ranks are children of a parent that
       * never initialises it. */
      int sv[2];
      socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
      fflush(stdout);
      pid_t pid[2];
      for (int r = 0; r < 2; r++) {
        pid[r] = fork();
        if (pid[r] == 0) {
          close(sv[1 - r]);
          rank_main(r, sv[r], sizes[i], busy, anchor_bytes);
          fflush(stdout);
          _exit(0);
        }
      }
      close(sv[0]);
      close(sv[1]);
      waitpid(pid[0], NULL, 0);
      waitpid(pid[1], NULL, 0);
    }
  return 0;
}
