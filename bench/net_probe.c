/* The probe's rendezvous (TCP) and measurement loops (net_probe.h). */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "net_probe.h"

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int xfer(int fd, void *p, size_t len, int send_it) {
  char *c = p;
  while (len) {
    ssize_t n = send_it ? send(fd, c, len, MSG_NOSIGNAL) : recv(fd, c, len, 0);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return -1;
    c += n, len -= (size_t)n;
  }
  return 0;
}

/* Send ours, receive theirs (length first). */
static int swap(int fd, const void *mine, size_t len, void *theirs,
                size_t *tlen) {
  uint32_t l = (uint32_t)len, tl = 0;
  if (xfer(fd, &l, 4, 1) || xfer(fd, (void *)mine, len, 1) ||
      xfer(fd, &tl, 4, 0) || tl > PROBE_BLOB_MAX || xfer(fd, theirs, tl, 0))
    return -1;
  *tlen = tl;
  return 0;
}

static int rendezvous(const char *hostport, int server) {
  char host[256];
  snprintf(host, sizeof host, "%s", hostport);
  char *colon = strrchr(host, ':');
  if (!colon) {
    fprintf(stderr, "net probe: %s is not HOST:PORT\n", hostport);
    return -1;
  }
  *colon = '\0';
  struct addrinfo hints = {0}, *ai = NULL;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = server ? AI_PASSIVE : 0;
  int rc = getaddrinfo(host, colon + 1, &hints, &ai);
  if (rc) {
    fprintf(stderr, "net probe: %s: %s\n", hostport, gai_strerror(rc));
    return -1;
  }
  int fd = socket(ai->ai_family, SOCK_STREAM, 0), one = 1, c = -1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (server) {
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 1) == 0)
      c = accept(fd, NULL, NULL);
    close(fd);
  } else {
    /* The server may not listen yet: try for 30 s. */
    for (int i = 0; i < 300 && c < 0; i++) {
      if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
        c = fd;
        break;
      }
      close(fd);
      fd = socket(ai->ai_family, SOCK_STREAM, 0);
      usleep(100000);
    }
    if (c < 0)
      close(fd);
  }
  freeaddrinfo(ai);
  if (c < 0)
    fprintf(stderr, "net probe: cannot %s %s: %s\n",
            server ? "listen on" : "connect to", hostport, strerror(errno));
  return c;
}

/* Open, exchange addresses and keys: both sides. */
static int setup(int fd, const probe_engine_t *e, const char *prov,
                 const char *dom, char *region) {
  unsigned char a[PROBE_BLOB_MAX], pa[PROBE_BLOB_MAX];
  size_t al = sizeof a, pl = 0; /* al: room in, length out */
  char desc[256] = "";
  if (e->open(prov, dom, a, &al, desc, sizeof desc) ||
      swap(fd, a, al, pa, &pl) || e->connect(pa, pl))
    return -1;
  if (e->reg(region, PROBE_REGION, a, &al) || swap(fd, a, al, pa, &pl) ||
      e->import(pa, pl))
    return -1;
  printf("# engine: %s; %s\n", e->engine, desc);
  return 0;
}

static int iters_for(size_t len, int quick) {
  int n = len <= 4096 ? 1000 : len <= 65536 ? 300 : 100;
  return quick ? n / 10 + 2 : n;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The median of n samples (sorted in place): robust on a shared machine,
 * where a mean carries every time the scheduler took the core away. */
static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* One latency series: op(size) then wait, each timed, after a warm-up;
 * the median is printed. */
static int latency(const probe_engine_t *e, const char *name, int op,
                   int quick) {
  double *t = malloc(sizeof *t * 1000);
  for (size_t len = 8; t && len <= (op == 2 ? 8u : 256u << 10); len *= 2) {
    int n = iters_for(len, quick);
    uint64_t got;
    for (int i = -n / 10 - 1; i < n; i++) {
      double t0 = now_us();
      int rc = op == 0   ? e->put(0, len)
               : op == 1 ? e->get(0, len)
                         : e->fetch_add(PROBE_REGION - 8, &got);
      if (rc || e->wait()) {
        free(t);
        return -1;
      }
      if (i >= 0)
        t[i] = now_us() - t0;
    }
    printf("%s %zu %.2f\n", name, len, median(t, n));
    fflush(stdout);
  }
  free(t);
  return t ? 0 : -1;
}

/* Rounds of `window` puts in flight then a wait; the median round's
 * rate is printed. */
static int bandwidth(const probe_engine_t *e, int quick) {
  double t[64];
  for (size_t len = 4096; len <= (4u << 20); len *= 2) {
    size_t window = 64,
           per = PROBE_REGION / len < window ? PROBE_REGION / len : window;
    int rounds = (int)((quick ? 16u << 20 : 128u << 20) / (len * per));
    rounds = rounds < 3 ? 3 : rounds > 64 ? 64 : rounds;
    for (int r = -1; r < rounds; r++) {
      double t0 = now_us();
      for (size_t k = 0; k < per; k++)
        if (e->put(k * len % PROBE_REGION, len))
          return -1;
      if (e->wait())
        return -1;
      if (r >= 0)
        t[r] = now_us() - t0;
    }
    printf("put_bw %zu %.1f\n", len,
           (double)len * (double)per / median(t, rounds));
    fflush(stdout);
  }
  return 0;
}

int probe_passive;

/* The server progresses until the client's byte says it is done: spinning,
 * or (--passive) spinning only PROBE_SPIN_US after its engine had work and
 * else sleeping on the engine's wait object.  Spinning a while after work
 * is what lets one request that needs several progress calls complete:
 * tcp;ofi_rxm (libfabric 1.17) does not wake a sleeper for every step of
 * one (docs/perf/net.md), and a server that slept after each call waited
 * out its whole sleep per step (the probe hung at 1 s a step). */
static int serve(int fd, const probe_engine_t *e) {
  double busy_until = 0;
  for (;;) {
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, 0) > 0) {
      char b;
      return recv(fd, &b, 1, 0) == 1 ? 0 : -1;
    }
    if (e->progress())
      return -1;
    if (!probe_passive || now_us() < busy_until)
      continue;
    int w = e->sleep(fd);
    if (w < 0)
      return -1;
    if (w > 0)
      busy_until = now_us() + PROBE_SPIN_US;
  }
}

int probe_main(int argc, char **argv, const probe_engine_t *e) {
  const char *prov = NULL, *dom = NULL;
  int quick = 0;
  if (argc < 3 || (strcmp(argv[1], "server") && strcmp(argv[1], "client"))) {
    fprintf(stderr,
            "usage: %s server|client HOST:PORT [--provider P] "
            "[--domain D] [--quick] [--passive]\n",
            argv[0]);
    return 2;
  }
  for (int i = 3; i < argc; i++) {
    if (!strcmp(argv[i], "--provider") && i + 1 < argc)
      prov = argv[++i];
    else if (!strcmp(argv[i], "--domain") && i + 1 < argc)
      dom = argv[++i];
    else if (!strcmp(argv[i], "--quick"))
      quick = 1;
    else if (!strcmp(argv[i], "--passive") && e->sleep)
      probe_passive = 1;
    else {
      fprintf(stderr, "%s: unknown option %s\n", argv[0], argv[i]);
      return 2;
    }
  }
  int server = !strcmp(argv[1], "server");
  int fd = rendezvous(argv[2], server);
  char *region = aligned_alloc(4096, PROBE_REGION);
  if (fd < 0 || !region)
    return 1;
  memset(region, 1, PROBE_REGION);
  int rc = setup(fd, e, prov, dom, region);
  char b = 0;
  if (!rc && server) {
    rc = serve(fd, e);
  } else if (!rc) {
    rc = latency(e, "put_quiet", 0, quick) || latency(e, "get", 1, quick) ||
         latency(e, "fetch_add", 2, quick) || bandwidth(e, quick);
    /* The server must not go before the client's last operation. */
    if (xfer(fd, &b, 1, 1))
      rc = -1;
  }
  /* Both sides: wait until the other is done with the endpoint. */
  if (!server || rc == 0) {
    if (server)
      (void)xfer(fd, &b, 1, 1);
    else
      (void)xfer(fd, &b, 1, 0);
  }
  e->close();
  close(fd);
  free(region);
  return rc ? 1 : 0;
}
