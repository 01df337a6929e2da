/* What the process holds (descriptors, mappings, address space), read from
 * /proc/self, and probes of whether an address can be touched. */
#include <dirent.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "kit.h"

void kit_res(kit_res_t *r) {
  memset(r, 0, sizeof *r);
  DIR *d = opendir("/proc/self/fd");
  if (d) {
    for (struct dirent *e; (e = readdir(d));)
      r->fds += e->d_name[0] != '.';
    closedir(d);
    r->fds--; /* the directory's own descriptor */
  }
  FILE *f = fopen("/proc/self/maps", "r");
  if (!f)
    return;
  char line[512];
  unsigned long a, b;
  while (fgets(line, sizeof line, f)) {
    r->maps++;
    if (sscanf(line, "%lx-%lx", &a, &b) == 2)
      r->va += b - a;
  }
  fclose(f);
}

int kit_leaked(const kit_res_t *a, const kit_res_t *b, int cycles,
               size_t va_unit, char *what, size_t len) {
  long q = cycles / 4 > 0 ? cycles / 4 : 1;
  size_t o = 0;
  what[0] = '\0';
  if (b->fds - a->fds >= q)
    o += (size_t)snprintf(what + o, len - o, "%d descriptors", b->fds - a->fds);
  if (b->maps - a->maps >= q && o < len)
    o += (size_t)snprintf(what + o, len - o, "%s%ld mappings", o ? ", " : "",
                          b->maps - a->maps);
  if (va_unit && b->va > a->va && b->va - a->va >= (uint64_t)q * va_unit &&
      o < len)
    o += (size_t)snprintf(what + o, len - o, "%s%llu bytes of address space",
                          o ? ", " : "", (unsigned long long)(b->va - a->va));
  return o > 0;
}

int kit_range_reserved(const void *va, size_t size) {
  uintptr_t want = (uintptr_t)va, end = want + size;
  FILE *f = fopen("/proc/self/maps", "r");
  if (!f)
    return 0;
  char line[512];
  unsigned long a, b;
  /* The lines are sorted: walk forward while they cover `want`. */
  while (want < end && fgets(line, sizeof line, f))
    if (sscanf(line, "%lx-%lx", &a, &b) == 2 && a <= want && want < b)
      want = b;
  fclose(f);
  return want >= end;
}

int kit_range_any(const void *va, size_t size) {
  uintptr_t lo = (uintptr_t)va, hi = lo + size;
  FILE *f = fopen("/proc/self/maps", "r");
  if (!f)
    return 0;
  char line[512];
  unsigned long a, b;
  int any = 0;
  while (!any && fgets(line, sizeof line, f))
    any = sscanf(line, "%lx-%lx", &a, &b) == 2 && a < hi && lo < b;
  fclose(f);
  return any;
}

int kit_fd_open(int fd) { return fd >= 0 && fcntl(fd, F_GETFD) != -1; }

static sigjmp_buf probe_jmp;
static void probe_handler(int sig) { siglongjmp(probe_jmp, sig); }

__attribute__((no_sanitize_address)) int kit_probe(void *p, int write) {
  struct sigaction sa, old_segv, old_bus;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = probe_handler;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, &old_segv);
  sigaction(SIGBUS, &sa, &old_bus);
  int ok = 0;
  if (sigsetjmp(probe_jmp, 1) == 0) {
    volatile char *c = p;
    char v = *c;
    if (write)
      *c = v;
    ok = 1;
  }
  sigaction(SIGSEGV, &old_segv, NULL);
  sigaction(SIGBUS, &old_bus, NULL);
  return ok;
}
