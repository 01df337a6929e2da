/* Waiting for another PE: spin briefly (a peer that is running answers
 * within a few hundred nanoseconds), then yield a while, then sleep in the
 * kernel until woken or 1 ms passes.  Sleeping matters when PEs outnumber
 * the CPUs (or other work shares them): a waiter that only yields keeps
 * taking turns of a CPU (a 4-PE barrier on 2 cores loaded by other jobs
 * took 280-350 us with yields only, 40-70 times a 2-PE one, in round 6);
 * but sleeping at once costs a wakeup each wait (SHM_YIELD_NS).  A wait on a
 * word the library itself writes (barrier arrivals and releases, signals)
 * sleeps in a futex on that word, and the writer wakes it when the word's PE
 * says it has sleepers; other waits (user variables written by plain stores)
 * sleep 1 ms at most per turn, after the yields.  A barrier's wait stays
 * awake a while instead where every other PE of its CPU sleeps (turn_over:
 * on a virtual machine an idle CPU takes ~100 us to wake).  Every turn also
 * ends the job when a PE called shmem_global_exit or a PE's process is gone
 * (a bounded wait). */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "shmem_peer.h"

/* Spins and yields before a wait sleeps.  With more PEs than CPUs, a few
 * spins, then SHM_YIELDS_FIRST yields, then yields for SHM_YIELD_NS more:
 * a yield hands the CPU to the PE awaited when it shares this CPU, and a
 * sleep costs a wakeup, which on a virtual machine whose CPU went idle
 * takes 50-250 us.  Sleeping after the 2 yields, 4-PE collectives on 2
 * quiet CPUs took 17-35 us at 4 B-16 KiB against 2-4 us for Open MPI's
 * oshmem, whose waits yield and never sleep; yielding 20 us, 100 us or
 * 1 ms more, 0.5-4 us.  Beside two busy loops (other programs on the
 * CPUs) a sleeper, once woken, runs before them and a yielder after them:
 * there 100 us more cost up to 1.2x and 1 ms made broadcasts 2.7x slower
 * (docs/perf/openshmem.md, round 11).  A longer wait sleeps, so a PE kept
 * waiting by a slow peer costs no CPU.  With a CPU for each PE, many
 * yields (a sleeper on a loaded machine waits for the scheduler to run it
 * again when woken: 2-PE broadcasts of 128 KiB took 400-650 us sleeping
 * against 8-17 us for Open MPI's spinning PEs).  Across hosts, the core's
 * wait turns (net_turn). */
#ifndef SHM_YIELD_NS
#define SHM_YIELD_NS 100000LL
#endif
/* Yields before that budget's clock starts.  Beside two busy loops, where
 * a yield may give a loop its whole slice, the budget counted from the
 * first yield made 4-PE broadcasts of 8 B 2.5x slower (1507-1573 us
 * against 577-634) than counted after 2 yields, as before round 11. */
#define SHM_YIELDS_FIRST 2
/* Pause-spins before those yields: a pause is ~50 ns here, and the PE
 * awaited often shares this CPU.  16 kept OSU's 4-PE broadcasts of 4-256 B
 * at 0.6 us, 2-6 at 0.3 (Open MPI's: 0.2-0.3); fewer were also faster for
 * the barrier, fcollect and reduce (round 11). */
#ifndef SHM_SPINS_OVERSUBSCRIBED
#define SHM_SPINS_OVERSUBSCRIBED 2
#endif
/* 0: a PE alone on its CPU sleeps as early as the others (to measure what
 * waiting awake there costs: docs/perf/openshmem.md, round 6). */
#ifndef SHM_ALONE_AWAKE
#define SHM_ALONE_AWAKE 1
#endif
/* With more PEs than CPUs, a barrier's wait whose CPU's other PEs all
 * sleep stays awake (spins) this long after its yields before it sleeps
 * too (turn_over). */
#ifndef SHM_AWAKE_NS
#define SHM_AWAKE_NS 100000LL
#endif
#define SHM_YIELDS_UNDERSUBSCRIBED 20000
#define SHM_NET_SPINS 64
#define SHM_SLEEP_NS 1000000L

static long long now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Whether process pid has ended: gone, or a zombie (exited, not yet reaped
 * by its parent; kill(pid, 0) still succeeds on those, and a launcher other
 * than symheap-run may not reap a PE until the others end). */
static int process_ended(int pid) {
  if (kill(pid, 0) != 0 && errno == ESRCH)
    return 1;
  char path[64], buf[256];
  snprintf(path, sizeof path, "/proc/%d/stat", pid);
  FILE *f = fopen(path, "r");
  if (!f)
    return 0; /* no /proc: kill's answer is all we have */
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  /* "pid (comm) S ...": the state follows the last ')' (comm may hold
   * parentheses and spaces). */
  const char *rp = strrchr(buf, ')');
  return rp && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X');
}

/* Whether PE pe on another host still answers: a get of its control
 * block's pid (a failure, or no answer within SYMHEAP_TIMEOUT_MS, is no). */
static int remote_alive(int pe) {
  int pid = 0;
  symheap_result_t r =
      symheap_get(shm__s.heap_win, pe,
                  shm__s.heap_shift[pe] + offsetof(struct shm_ctrl, pid), &pid,
                  sizeof pid);
  if (r == SYMHEAP_SUCCESS)
    return 1;
  fprintf(stderr,
          "symheap-shmem: PE %d: PE %d on another host does not answer (%s); "
          "ending the job instead of waiting for it\n",
          shm__s.me, pe, symheap_last_error());
  return 0;
}

/* A PE whose process is gone will never answer: end the job.  This host's
 * PEs by their pid; another host's by a get of its control block. */
static void check_peers_alive(void) {
  for (int p = 0; p < shm__s.npes; p++) {
    if (shm__remote(p)) {
      if (!remote_alive(p))
        exit(1);
      continue;
    }
    struct shm_ctrl *c = (struct shm_ctrl *)shm__s.heap_peer[p];
    int pid = __atomic_load_n(&c->pid, __ATOMIC_RELAXED);
    if (pid > 0 && process_ended(pid)) {
      fprintf(stderr,
              "symheap-shmem: PE %d: PE %d (pid %d) has exited; ending the "
              "job instead of waiting for it\n",
              shm__s.me, p, pid);
      exit(1);
    }
  }
}

void shm__turn_checks(struct shm_spin *s) {
  int req = __atomic_load_n(&shm__s.ctrl->exit_req, __ATOMIC_ACQUIRE);
  if (req) {
    fflush(stdout);
    exit(req - 1);
  }
  if ((s->n & 255) == 0) {
    long long t = now_ns();
    if (!s->next_check_ns) {
      s->next_check_ns = t + 1000000000LL;
      s->began = t;
    } else if (t >= s->next_check_ns) {
      s->next_check_ns = t + 1000000000LL;
      check_peers_alive();
      /* A peer that neither ends nor arrives (stopped, or deadlocked) ends
       * the job when SYMHEAP_SHMEM_TIMEOUT_MS is set; unset, a wait lasts
       * as long as the peers take, as the specification has it (a PE may
       * compute for hours before a barrier).  Before, for ever.  Not a
       * loop on shmem_test: its caller works between the turns. */
      if (shm__s.wait_limit_ns && !s->polls &&
          t - s->began > shm__s.wait_limit_ns)
        shm__fatal("a wait for the other PEs lasted %lld ms, more than "
                   "SYMHEAP_SHMEM_TIMEOUT_MS=%lld (a PE stopped or "
                   "deadlocked?); unset, waits last as long as the PEs take",
                   (t - s->began) / 1000000, shm__s.wait_limit_ns / 1000000);
    }
  }
}

/* Sleeps on the 32-bit word at w while it holds `seen` (any change, or a
 * wake, or the timeout ends it); counted in this PE's sleepers so that
 * writers know to wake.  The sleepers increment and the writer's store are
 * both sequentially consistent, so either the writer sees a sleeper or the
 * futex sees the new value. */
static void sleep_on(const void *w, int seen) {
  struct timespec ts = {0, SHM_SLEEP_NS};
  __atomic_fetch_add(&shm__s.ctrl->sleepers, 1, __ATOMIC_SEQ_CST);
  if (__atomic_load_n((const int *)w, __ATOMIC_SEQ_CST) == seen)
    syscall(SYS_futex, w, FUTEX_WAIT, seen, &ts, NULL, 0);
  __atomic_fetch_sub(&shm__s.ctrl->sleepers, 1, __ATOMIC_SEQ_CST);
}

/* A turn of a wait on a job across hosts: the network engine may owe this
 * PE the very update it waits for, and a write from another host wakes no
 * futex.  After the first spins, the core's turns (symheap_comm_wait_turn):
 * the engine progressed, spinning while it has work, asleep on its wait
 * descriptors while it is idle, so that another host's write wakes the
 * wait at once and an idle wait costs no CPU.  (Before, every turn
 * progressed the engine and napped 20 us: a write that landed during a
 * nap waited for its end, and an idle wait woke 50000 times a second.)  A
 * same-host PE's plain store wakes no sleep: the core's naps grow with the
 * wait (a sixteenth of it, 20 us to 20 ms). */
static void net_turn(struct shm_spin *s) {
  shm__turn_checks(s);
  /* Few pauses before the engine's turns: the engine may owe this PE the
   * update (SYMHEAP_NET_PROGRESS=none), and its turns spin as well. */
  unsigned spins = shm__s.spin_explicit ? shm__s.spin_before_yield
                                        : SHM_NET_SPINS;
  if (++s->n < spins) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
    return;
  }
  symheap_result_t r = symheap_comm_wait_turn(shm__s.comm, &s->net);
  if (r != SYMHEAP_SUCCESS)
    shm__fatal("waiting: %s (%s)", symheap_strerror(r), symheap_last_error());
}

/* More PEs than CPUs: the CPUs this process may use, or, when a launcher
 * bound it to one, the CPUs online (PEs bound one to a CPU each). */
int shm__oversubscribed(void) {
  static int known; /* 0 until known, then 1 + the answer; threads may race */
  int v = __atomic_load_n(&known, __ATOMIC_RELAXED);
  if (!v) {
    cpu_set_t set;
    long cpus = 0;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
      cpus = CPU_COUNT(&set);
    if (cpus <= 1)
      cpus = sysconf(_SC_NPROCESSORS_ONLN);
    v = 1 + (shm__s.npes > cpus);
    __atomic_store_n(&known, v, __ATOMIC_RELAXED);
  }
  return v - 1;
}

int shm__note_cpu(void) {
  int cpu = sched_getcpu();
  if (cpu >= 0)
    __atomic_store_n(&shm__s.ctrl->cpu, cpu + 1, __ATOMIC_RELAXED);
  return cpu;
}

/* Whether another PE of this host last began a wait on this PE's CPU
 * (each PE notes its CPU in its control page as a wait begins).  A hint:
 * a PE that has moved since its last wait is counted where it was, and
 * a wrong answer costs time only (a few more yields, or an early sleep).
 * One pass over the PEs per wait, not per turn. */
static int cpu_shared(void) {
  int cpu = shm__note_cpu();
  if (cpu < 0)
    return 1;
  for (int p = 0; p < shm__s.npes; p++) {
    if (p == shm__s.me || shm__remote(p))
      continue;
    const struct shm_ctrl *c = (const struct shm_ctrl *)shm__s.heap_peer[p];
    if (__atomic_load_n(&c->cpu, __ATOMIC_RELAXED) == cpu + 1)
      return 1;
  }
  return 0;
}

/* Whether every other PE of this host that last waited on this PE's CPU
 * is asleep in the kernel.  Then none of them needs the CPU, and if this
 * PE slept too the CPU would go idle, and waking it again costs far more
 * than the barrier: on the 2-CPU virtual machine, a futex wake of an idle
 * CPU took 100-120 us (both PEs of one CPU asleep in every 4-PE barrier:
 * 75-86 us each, against 11-15 us when that CPU stays busy). */
static int mates_asleep(void) {
  int cpu = __atomic_load_n(&shm__s.ctrl->cpu, __ATOMIC_RELAXED);
  for (int p = 0; p < shm__s.npes; p++) {
    if (p == shm__s.me || shm__remote(p))
      continue;
    const struct shm_ctrl *c = (const struct shm_ctrl *)shm__s.heap_peer[p];
    if (__atomic_load_n(&c->cpu, __ATOMIC_RELAXED) == cpu &&
        !__atomic_load_n(&c->asleep, __ATOMIC_RELAXED))
      return 0;
  }
  return 1;
}

/* An oversubscribed wait's turn after its spins: yield SHM_YIELDS_FIRST
 * times, then for SHM_YIELD_NS more, then sleep (0).  A barrier's wait
 * (s->awake) whose CPU's other PEs all sleep spins up to SHM_AWAKE_NS more
 * instead, so that the CPU does not go idle.  Only where they sleep: a PE
 * that shares the CPU and is awake (the one awaited, often) gets it by
 * this one's sleep, which a yield does not do reliably (a variant that
 * stayed awake while its CPU's other PE merely waited made the last
 * arriver's CPU mate yield all through a 4-PE barrier, 75-110 us each).
 * Only a barrier's: every wait staying awake made OSU's 4-PE broadcasts of
 * 4 B-16 KiB 1.2-2.2x slower (1.4-2.4 us against 1.0-1.3).  Spinning, not
 * yielding: yields made them 1.1-1.9x slower where spins made them
 * 1.0-1.4x (docs/perf/openshmem.md, round 9). */
static int turn_over(struct shm_spin *s, unsigned spins) {
  if (s->n < spins + SHM_YIELDS_FIRST) {
    sched_yield();
    return 1;
  }
  long long t = now_ns();
  if (!s->yield_from)
    s->yield_from = t;
  if (t - s->yield_from < SHM_YIELD_NS) {
    sched_yield();
    return 1;
  }
  if (!s->awake)
    return 0;
  if (!s->awake_from)
    s->awake_from = t;
  if (t - s->awake_from < SHM_AWAKE_NS && mates_asleep()) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
    return 1;
  }
  return 0;
}

/* Whether this turn spun or yielded (0: time to sleep).  With more PEs
 * than CPUs a wait that shares its CPU with another PE spins only a few
 * times (a pause there is a turn the PE it waits for may need), then
 * yields, then sleeps (turn_over).  A PE alone on its CPU waits as an
 * undersubscribed one does: its turns are no one else's in the job, and
 * asleep it gives its CPU to other programs and waits for them when woken
 * (a 4-PE broadcast whose root sat alone on a CPU loaded by others: 685
 * us, where the same PEs on one CPU took 0.5 us). */
static int turn_busy(struct shm_spin *s) {
  shm__turn_checks(s);
  int over = shm__oversubscribed();
  if (over && s->n == 0)
    s->shared_cpu = SHM_ALONE_AWAKE ? cpu_shared() : 1;
  over = over && s->shared_cpu;
  unsigned spins = over && !shm__s.spin_explicit ? SHM_SPINS_OVERSUBSCRIBED
                                                 : shm__s.spin_before_yield;
  if (++s->n < spins) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
    return 1;
  }
  if (over)
    return turn_over(s, spins);
  if (s->n < spins + SHM_YIELDS_UNDERSUBSCRIBED) {
    sched_yield();
    return 1;
  }
  return 0;
}

void shm__spin_on(struct shm_spin *s, const void *word, int seen) {
  if (__builtin_expect(shm__s.net, 0)) {
    net_turn(s);
    return;
  }
  if (turn_busy(s))
    return;
  __atomic_add_fetch(&shm__s.ctrl->asleep, 1, __ATOMIC_RELAXED);
  if (word) {
    sleep_on(word, seen);
  } else {
    struct timespec ts = {0, SHM_SLEEP_NS};
    nanosleep(&ts, NULL);
  }
  __atomic_sub_fetch(&shm__s.ctrl->asleep, 1, __ATOMIC_RELAXED);
}

/* A group's flags and PE root's wake word (see shm_ctrl): the waiter
 * counts itself in wake_sleepers, reads the generation, and sleeps only if
 * its flag is still short; a raiser raises every flag first, then looks at
 * wake_sleepers (each side's first access is sequentially consistent, so
 * either the raiser sees a sleeper or the sleeper sees its flag).  One
 * FUTEX_WAKE then wakes every member, where a wake per member's word let
 * the first one woken take the CPU from the waker before the next wake. */
static long wait_raised(const long *flag, long n, int root, int awake) {
  struct shm_spin s = SHM_SPIN_INIT;
  s.awake = awake;
  struct shm_ctrl *c = (struct shm_ctrl *)shm__s.heap_peer[root];
  long v;
  while ((v = __atomic_load_n(flag, __ATOMIC_ACQUIRE)) < n) {
    if (turn_busy(&s))
      continue;
    struct timespec ts = {0, SHM_SLEEP_NS};
    __atomic_fetch_add(&c->wake_sleepers, 1, __ATOMIC_SEQ_CST);
    int gen = __atomic_load_n(&c->wake_gen, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(flag, __ATOMIC_SEQ_CST) < n) {
      __atomic_add_fetch(&shm__s.ctrl->asleep, 1, __ATOMIC_RELAXED);
      syscall(SYS_futex, &c->wake_gen, FUTEX_WAIT, gen, &ts, NULL, 0);
      __atomic_sub_fetch(&shm__s.ctrl->asleep, 1, __ATOMIC_RELAXED);
    }
    __atomic_fetch_sub(&c->wake_sleepers, 1, __ATOMIC_SEQ_CST);
  }
  return v;
}

long shm__wait_raised(const long *flag, long n, int root) {
  return wait_raised(flag, n, root, 0);
}

void shm__wait_released(const long *flag, int root) {
  (void)wait_raised(flag, 1, root, 1);
}

/* The wakers' checks for sleepers are sequentially consistent loads: every
 * caller's store or read-modify-write of the word before them is
 * sequentially consistent too (the flags' adds, a signal's store, the
 * readers' count), as is the sleeper's increment before it rereads its
 * word, so either side sees the other.  A read-modify-write of the count
 * (an add of 0), as before round 13, took the line from the PEs that read
 * it: 2-PE broadcast, collect, fcollect and reduce of up to 1 KiB were
 * 5-10% slower with it (docs/perf/openshmem.md, round 13). */
void shm__wake_group(int root) {
  struct shm_ctrl *c = (struct shm_ctrl *)shm__s.heap_peer[root];
  if (__atomic_load_n(&c->wake_sleepers, __ATOMIC_SEQ_CST)) {
    __atomic_add_fetch(&c->wake_gen, 1, __ATOMIC_SEQ_CST);
    syscall(SYS_futex, &c->wake_gen, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
  }
}

void shm__spin(struct shm_spin *s) { shm__spin_on(s, NULL, 0); }

void shm__wake(int pe, const void *word) {
  if (shm__s.net) /* no wait sleeps in a futex across hosts */
    return;
  struct shm_ctrl *c = (struct shm_ctrl *)shm__s.heap_peer[pe];
  if (__atomic_load_n(&c->sleepers, __ATOMIC_SEQ_CST))
    syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* Until this PE's 8-byte symmetric word compares true with value: in
 * slices of symheap_signal_wait_until (which progresses the engine), with
 * the checks of every wait (a global exit, a PE gone) between them. */
uint64_t shm__net_wait_word(const void *word, int cmp, uint64_t value) {
  symheap_window_t w;
  size_t off;
  shm__where(word, shm__s.me, &w, &off);
  struct shm_spin spin = SHM_SPIN_INIT;
  for (;;) {
    uint64_t seen = 0;
    symheap_result_t r = symheap_signal_wait_until(w, off, (symheap_cmp_t)cmp,
                                                   value, &seen, 100);
    if (r == SYMHEAP_SUCCESS)
      return seen;
    if (r != SYMHEAP_ERR_TIMEOUT)
      shm__fatal("wait on a symmetric word: %s (%s)", symheap_strerror(r),
                 symheap_last_error());
    spin.n = 0; /* turn_checks' liveness check is due every 256 turns */
    shm__turn_checks(&spin);
  }
}
