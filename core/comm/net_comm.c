/* A comm's net adaptor: opened at comm init when SYMHEAP_NET names one and
 * the comm spans hosts (open, every rank's address through the ccl,
 * connect; each step agreed), closed at destroy.  Engines with manual
 * progress (tcp;ofi_rxm emulates atomics at the target) advance only inside
 * their calls, so a rank that merely waits must still call progress(): every
 * wait of the core does (net_idle, the boot floor's idle hook), and a
 * progress thread does when SYMHEAP_NET_PROGRESS asks.  Where the adaptor
 * hands out wait descriptors (ops.wait_fds: tcp;ofi_rxm's CQ fd), the
 * thread sleeps on them instead, and so does a wait once its engine has
 * been idle for WAIT_SPIN_NS: a rank inside a waiting call spins while
 * peers' operations arrive (answering at spin speed) and sleeps when they
 * stop; a rank outside symheap is served by its sleeping thread; neither
 * uses CPU while idle (docs/perf/net.md). */
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "base/config.h"
#include "boot/sock.h"
#include "agree.h"
#include "net.h"
#include "net_stage.h"

/* The process's open adaptors, for the waits' progress. */
static pthread_mutex_t g_list = PTHREAD_MUTEX_INITIALIZER;
static symheap__netc_t *g_open;
static int g_manual; /* open adaptors with manual progress the waits drive */

/* How long a waiting rank spins after its engine had work (a wakeup on
 * its wait fds, or fi_trywait saying work is pending) before it sleeps on
 * them again: a target in a barrier serves a burst of peers' operations at
 * spin speed (as MPI's and OpenSHMEM's waits do), not a wakeup each, and
 * an idle wait costs no CPU. */
#define WAIT_SPIN_NS 5000000ull /* 5 ms */

/* One adaptor's part of a wait's idle turn (net_idle): progress, then
 * IDLE_BUSY while it was busy in the last WAIT_SPIN_NS (or has staged
 * work no fd wakes for), IDLE_BLIND where it has no wait fds to sleep on
 * (and so no word of work either: the wait may nap briefly between turns),
 * else IDLE_ARMED with its wait fds armed into io.  Never waits for the
 * lock: its holder progresses the engine (busy where the engine has fds,
 * as before; blind where it has none). */
enum { IDLE_ARMED, IDLE_BUSY, IDLE_BLIND };
static int idle_one(symheap__netc_t *n, symheap__idle_t *io, uint64_t now) {
  if (io->woke)
    __atomic_store_n(&n->spin_until, now + WAIT_SPIN_NS, __ATOMIC_RELAXED);
  int cannot = n->has_wait_fds ? IDLE_BUSY : IDLE_BLIND;
  if (n->locked && pthread_mutex_trylock(&n->lock) != 0)
    return cannot;
  /* Uncounted where the thread sleeps on the engine's fds: the thread
   * keeps off the engine only while this wait is seen running (wait_seen,
   * progress_main), and takes it back within WAIT_SEEN_NS of the wait's
   * last turn, so a waiting rank the scheduler leaves off the CPU (a
   * loaded machine: a spinning waiter runs again only after every other
   * runnable task) is still served at its thread's wakeup. */
  if (!n->thread_sleeps)
    __atomic_add_fetch(&n->calls, 1, __ATOMIC_RELAXED);
  __atomic_store_n(&n->wait_seen, now, __ATOMIC_RELAXED);
  (void)n->ops.progress(n->ctx);
  int spin = cannot, k = -1;
  if (n->has_wait_fds &&
      now >= __atomic_load_n(&n->spin_until, __ATOMIC_RELAXED) &&
      io->nfds < SYMHEAP__IDLE_FDS) {
    k = n->ops.wait_fds(n->ctx, io->fds + io->nfds,
                        SYMHEAP__IDLE_FDS - io->nfds);
    if (k == 0) /* work pending: busy */
      __atomic_store_n(&n->spin_until, now + WAIT_SPIN_NS, __ATOMIC_RELAXED);
    else if (k > 0 && io->nfds + k <= SYMHEAP__IDLE_FDS)
      spin = IDLE_ARMED;
  }
  if (n->locked)
    pthread_mutex_unlock(&n->lock);
  symheap__stage_drain(n, 0); /* peers' staged puts, if any */
  if (spin != IDLE_BUSY && symheap__stage_pending(n))
    spin = IDLE_BUSY; /* staged work no fd wakes for */
  if (spin == IDLE_ARMED)
    io->nfds += k;
  return spin;
}

/* The boot floor's idle hook (boot/sock.h), set at the first open: while
 * an adaptor with manual progress is open, every wait of this process
 * progresses the open adaptors (a peer's operation on this rank completes
 * only when it progresses) and spins while they are busy, then sleeps on
 * their wait fds beside its socket; an adaptor without wait fds keeps it
 * spinning, with io->nap_ok where none is busy (the wait's turns may be
 * spaced by short naps: boot/idle.h).  0: nothing to spin for. */
static int net_idle(symheap__idle_t *io) {
  if (__atomic_load_n(&g_manual, __ATOMIC_RELAXED) <= 0)
    return 0;
  int busy = 0, blind = 0;
  uint64_t now = symheap__now_ns();
  pthread_mutex_lock(&g_list);
  for (symheap__netc_t *n = g_open; n; n = n->next) {
    int s = idle_one(n, io, now);
    busy |= s == IDLE_BUSY;
    blind |= s == IDLE_BLIND;
  }
  pthread_mutex_unlock(&g_list);
  io->nap_ok = blind && !busy;
  return busy || blind;
}

/* The progress thread: a turn every 50 us while no other thread calls the
 * adaptor (a rank computing outside symheap).  While the comm's thread
 * issues, quiets or waits, it progresses the engine itself: a turn then
 * would only take the lock from it (a put waiting behind the thread's
 * progress costs a wakeup on a loaded machine), so the thread skips it,
 * and never blocks on the lock. */
#define PROGRESS_ASIDE_NS 10000000ull /* 10 ms */
/* Where it sleeps on the engine's fds its turns cost no CPU while idle: it
 * takes the engine 1 ms after the last call (a waiting rank spins that
 * long, then sleeps; the comm's thread issuing every few us keeps it
 * aside). */
#define PROGRESS_ASIDE_SLEEP_NS 1000000ull
/* Where it sleeps on the engine's fds, a wait that took a turn within
 * WAIT_SEEN_NS is running and serves peers itself: the thread naps
 * BESIDE_NAP_NS at a time and stays off the engine.  Asleep on the same
 * fds, it woke for every message the spinning wait was about to take, and
 * took CPU and the engine's lock from it: on the quiet 2-CPU machine, put +
 * quiet at 16-256 KiB ran 1.12-2.07x the spinning floor with the thread
 * and 1.00-1.15x without it (docs/perf/net.md, rounds 8 and 9).  Its naps
 * still cost: at 200 us, put bandwidth at 4-32 KiB was 4-15% under 1 ms's
 * in six runs (round 10).  1 ms is also how long the thread keeps aside
 * after the rank's own calls (PROGRESS_ASIDE_SLEEP_NS): a wait descheduled
 * or asleep, or one that returned, hands the engine back within about
 * 1.1 ms. */
#define WAIT_SEEN_NS 100000ull /* 100 us: a spinning wait turns every ~1 us */
#define BESIDE_NAP_NS 1000000L
#define SLEEP_FDS 8
#define SLEEP_MS 200 /* a bound on a sleep, should a wakeup be missed */

/* One turn of the thread when it is its turn: progress, then, where the
 * engine allows, sleep in poll() until it has work (or close wakes it).
 * 1: the turn slept or must be taken again at once; 0: nap instead. */
static int progress_turn(symheap__netc_t *n) {
  if (n->locked && pthread_mutex_trylock(&n->lock) != 0)
    return 0;
  (void)n->ops.progress(n->ctx);
  if (n->locked)
    pthread_mutex_unlock(&n->lock);
  /* Staged puts the progress just took in are applied before any sleep
   * (the write that carried them is what woke this thread). */
  symheap__stage_drain(n, 0);
  if (!n->thread_sleeps)
    return 0;
  /* A wait asleep on the same descriptors may have lost the wakeup to
   * this thread, which has now applied what woke both. */
  symheap__idle_kick();
  /* Staged work the drain could not finish (an acknowledgement whose lock
   * was taken, a descriptor another thread's progress took in): no fd
   * would wake the sleep for it, so nap (50 us) and drain again. */
  if (symheap__stage_pending(n))
    return 0;
  if (n->locked && pthread_mutex_trylock(&n->lock) != 0)
    return 0;
  struct pollfd p[SLEEP_FDS + 1];
  int fds[SLEEP_FDS];
  int k = n->ops.wait_fds(n->ctx, fds, SLEEP_FDS);
  if (n->locked)
    pthread_mutex_unlock(&n->lock);
  if (k == 0)
    return 1; /* work pending: progress again */
  if (k < 0)
    return 0;
  if (k > SLEEP_FDS)
    k = SLEEP_FDS;
  for (int i = 0; i < k; i++)
    p[i] = (struct pollfd){fds[i], POLLIN, 0};
  p[k] = (struct pollfd){n->stop_fd, POLLIN, 0};
  (void)poll(p, (nfds_t)k + 1, SLEEP_MS);
  return 1;
}

static void *progress_main(void *arg) {
  symheap__netc_t *n = arg;
  struct timespec nap = {0, 50 * 1000}; /* idle cost: a wakeup per 50 us */
  struct timespec aside = {0, 2 * 1000 * 1000};
  struct timespec beside = {0, BESIDE_NAP_NS};
  unsigned long seen = 0;
  uint64_t quiet_since = symheap__now_ns();
  while (!__atomic_load_n(&n->stop, __ATOMIC_ACQUIRE)) {
    unsigned long now = __atomic_load_n(&n->calls, __ATOMIC_RELAXED);
    uint64_t t = symheap__now_ns();
    if (now != seen)
      quiet_since = t;
    seen = now;
    /* Quiet for PROGRESS_ASIDE_NS: nobody else progresses.  (Not one nap:
     * on a loaded machine a waiting thread that yielded may not run again
     * for milliseconds, and the engine is its until it does.) */
    int mine = t - quiet_since >= (n->thread_sleeps ? PROGRESS_ASIDE_SLEEP_NS
                                                    : PROGRESS_ASIDE_NS);
    if (n->thread_sleeps &&
        __atomic_load_n(&n->wait_seen, __ATOMIC_RELAXED) + WAIT_SEEN_NS > t) {
      nanosleep(&beside, NULL); /* a wait is serving: keep off the engine */
      continue;
    }
    if (mine && progress_turn(n))
      continue;
    /* Peers' staged puts land even while this rank computes (a drain
     * another thread runs is left to it). */
    symheap__stage_drain(n, 0);
    /* Aside, it naps longer: each wakeup may preempt the very thread that
     * progresses (on a loaded machine that thread then waits its turn
     * behind every runnable task: a wakeup every 50 us made each remote
     * operation cost ~300 us instead of ~25). */
    nanosleep(mine ? &nap : &aside, NULL);
  }
  return NULL;
}

/* SYMHEAP_NET_PROGRESS: auto (a thread for manual progress), thread, none. */
static symheap_result_t start_progress(symheap__netc_t *n) {
  int mode = 0;
  symheap_result_t r = symheap__cfg_choice("SYMHEAP_NET_PROGRESS", &mode);
  if (r != SYMHEAP_SUCCESS)
    return r;
  /* Staging too: a target's descriptors are applied only by its progress. */
  int want = mode == 1 || (mode == 0 && ((n->caps.caps & SYMHEAP_NET_CAP_MANUAL) ||
                                         n->stage));
  if (!want)
    return SYMHEAP_SUCCESS;
  if (n->has_wait_fds)
    n->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  n->thread_sleeps = n->stop_fd >= 0;
  if (pthread_create(&n->thread, NULL, progress_main, n) != 0) {
    n->thread_sleeps = 0;
    return symheap__error(SYMHEAP_ERR_SYSTEM,
                          "net adaptor '%s': cannot start the progress thread",
                          n->ops.name);
  }
  n->thread_on = 1;
  if (n->thread_sleeps)
    symheap__idle_kicks_hold(1); /* it kicks the waits (progress_turn) */
  return SYMHEAP_SUCCESS;
}

static void stop_progress(symheap__netc_t *n) {
  if (n->thread_on) {
    __atomic_store_n(&n->stop, 1, __ATOMIC_RELEASE);
    if (n->stop_fd >= 0)
      (void)!write(n->stop_fd, &(uint64_t){1}, sizeof(uint64_t));
    pthread_join(n->thread, NULL);
    n->thread_on = 0;
    if (n->thread_sleeps)
      symheap__idle_kicks_hold(0);
  }
  if (n->stop_fd >= 0) {
    close(n->stop_fd);
    n->stop_fd = -1;
  }
}

static void netc_free(symheap__netc_t *n) {
  if (!n)
    return;
  stop_progress(n);
  if (n->ctx)
    n->ops.close(n->ctx);
  pthread_mutex_destroy(&n->lock);
  free(n->chunks);
  free(n);
}

/* Local: the adaptor opened for this rank; *addr its address. */
static symheap_result_t open_local(symheap_comm_t c,
                                   const symheap__net_table_t *tab,
                                   symheap__netc_t **out, char *addr,
                                   uint32_t *alen) {
  const symheap_net_ops *ops = &tab->ops;
  char why[256] = "";
  if (!ops->available(&symheap__host_services, why, sizeof why))
    return symheap__error(SYMHEAP_ERR_UNSUPPORTED,
                          "net adaptor '%s' (SYMHEAP_NET) is not available "
                          "here: %s",
                          ops->name, why[0] ? why : "it gave no reason");
  symheap__netc_t *n = calloc(1, sizeof *n);
  if (!n)
    return symheap__error(SYMHEAP_ERR_NO_MEMORY, "net adaptor: no memory");
  n->ops = *ops;
  n->has_atomic = tab->has_atomic;
  n->nranks = c->nranks;
  n->timeout_ms = c->timeout_ms;
  n->stop_fd = -1;
  pthread_mutex_init(&n->lock, NULL);
  /* No provider from the core: an adaptor that has providers declares and
   * reads its own variable (ofi: SYMHEAP_NET_PROVIDER, services' params). */
  symheap_net_init_t init = {sizeof init, c->rank, c->nranks, NULL};
  size_t len = SYMHEAP_NET_ADDR_MAX;
  symheap_result_t r =
      ops->open(&symheap__host_services, &init, &n->ctx, addr, &len);
  if (r == SYMHEAP_SUCCESS && len > SYMHEAP_NET_ADDR_MAX)
    r = symheap__error(SYMHEAP_ERR_INTERNAL,
                       "net adaptor '%s': address of %zu bytes", ops->name,
                       len);
  if (r == SYMHEAP_SUCCESS) {
    n->caps.struct_size = sizeof n->caps;
    r = ops->query(n->ctx, &n->caps);
  }
  if (r != SYMHEAP_SUCCESS) {
    r = symheap__error_context(r, "opening net adaptor '%s'", ops->name);
    netc_free(n);
    return r;
  }
  n->locked = !(n->caps.caps & SYMHEAP_NET_CAP_THREAD_SAFE);
  /* Whether the engine has descriptors to sleep on (a probe: 0 or more). */
  int fds[SLEEP_FDS];
  n->has_wait_fds =
      n->ops.wait_fds && n->ops.wait_fds(n->ctx, fds, SLEEP_FDS) >= 0;
  *alen = (uint32_t)len;
  *out = n;
  return SYMHEAP_SUCCESS;
}

/* Collective: every rank's address, then connect (agreed). */
static symheap_result_t connect_all(symheap_comm_t c, symheap__netc_t *n,
                                    const char *addr) {
  size_t stride = SYMHEAP_NET_ADDR_MAX;
  char *all = calloc((size_t)c->nranks, stride);
  symheap_result_t r =
      all ? SYMHEAP_SUCCESS
          : symheap__error(SYMHEAP_ERR_NO_MEMORY, "net adaptor: no memory");
  r = symheap__agree(c, r, 0, NULL, 0, NULL);
  if (r == SYMHEAP_SUCCESS)
    r = symheap__comm_allgather(c, addr, all, stride);
  if (r == SYMHEAP_SUCCESS) {
    r = n->ops.connect(n->ctx, c->nranks, all, stride);
    if (r != SYMHEAP_SUCCESS)
      r = symheap__error_context(r, "net adaptor '%s': connecting",
                                 n->ops.name);
    r = symheap__agree(c, r, 0, NULL, 0, NULL);
  }
  free(all);
  return r;
}

symheap_result_t symheap__net_comm_open(symheap_comm_t c,
                                        const symheap__net_table_t *tab) {
  const symheap_net_ops *ops = &tab->ops;
  if (c->nhosts == 1) {
    snprintf(c->net_why, sizeof c->net_why,
             "the comm spans one host: net adaptor '%s' (SYMHEAP_NET) is "
             "opened only across hosts",
             ops->name);
    SYMHEAP_INFO("%s", c->net_why);
    return SYMHEAP_SUCCESS;
  }
  symheap__netc_t *n = NULL;
  char addr[SYMHEAP_NET_ADDR_MAX];
  memset(addr, 0, sizeof addr);
  uint32_t alen = 0;
  symheap_result_t r = open_local(c, tab, &n, addr, &alen);
  r = symheap__agree(c, r, 0, NULL, 0, NULL);
  if (r == SYMHEAP_SUCCESS)
    r = connect_all(c, n, addr);
  c->netc = n; /* staging's setup reads it; set for good below */
  if (r == SYMHEAP_SUCCESS)
    r = symheap__stage_open(c); /* agreed */
  if (r == SYMHEAP_SUCCESS)
    r = symheap__agree(c, start_progress(n), 0, NULL, 0, NULL);
  if (r != SYMHEAP_SUCCESS) {
    if (n)
      stop_progress(n);
    symheap__stage_close(c);
    c->netc = NULL;
    netc_free(n);
    return symheap__error_context(r, "net adaptor '%s' (SYMHEAP_NET)",
                                  ops->name);
  }
  symheap__sock_set_idle_hook(net_idle); /* the same hook each time */
  pthread_mutex_lock(&g_list);
  n->next = g_open;
  g_open = n;
  if (n->caps.caps & SYMHEAP_NET_CAP_MANUAL)
    __atomic_add_fetch(&g_manual, 1, __ATOMIC_RELAXED);
  pthread_mutex_unlock(&g_list);
  SYMHEAP_INFO("net adaptor '%s' open: provider %s, fabric %s, caps 0x%x, "
               "progress %s",
               ops->name, n->caps.provider, n->caps.fabric, n->caps.caps,
               n->thread_sleeps ? "a thread sleeping on the engine's fds"
               : n->thread_on   ? "thread and waits"
                                : "waits");
  return SYMHEAP_SUCCESS;
}

void symheap__net_comm_close(symheap_comm_t c) {
  symheap__netc_t *n = c->netc;
  if (!n)
    return;
  pthread_mutex_lock(&g_list);
  for (symheap__netc_t **p = &g_open; *p; p = &(*p)->next)
    if (*p == n) {
      *p = n->next;
      break;
    }
  if (n->caps.caps & SYMHEAP_NET_CAP_MANUAL)
    __atomic_sub_fetch(&g_manual, 1, __ATOMIC_RELAXED);
  pthread_mutex_unlock(&g_list);
  stop_progress(n); /* it drains staged regions about to go */
  /* The heap's chunks left (mem/net_heap.c made them; the heap is gone). */
  for (uint32_t i = 0; i < n->nchunks; i++)
    if (n->chunks[i]) {
      symheap__netreg_free(c, n->chunks[i]);
      n->chunks[i] = NULL;
    }
  symheap__stage_close(c);
  c->netc = NULL;
  netc_free(n);
}

symheap_result_t symheap__net_quiet(symheap_comm_t c, const char *fn) {
  symheap__netc_t *n = c->netc;
  symheap__net_lock(n);
  symheap_result_t r = n->ops.quiet(n->ctx, c->timeout_ms);
  symheap__net_unlock(n);
  /* Its progress may have taken in peers' descriptors, which a sleeping
   * progress thread would not wake for. */
  symheap__stage_drain(n, 1);
  if (r != SYMHEAP_SUCCESS)
    return symheap__error_context(r, "%s: net adaptor '%s'", fn, n->ops.name);
  /* Staged puts are complete once their targets applied them. */
  return symheap__stage_wait(n, -1, c->timeout_ms, fn);
}
