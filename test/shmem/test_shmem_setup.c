/* Setup, query and memory management from the specification: init_thread,
 * query_thread, my_pe/n_pes, the version and name queries, pe_accessible,
 * addr_accessible, shmem_ptr, symmetric static and global variables (the
 * data and bss segments), and shmem_malloc/calloc/align/realloc/free/
 * malloc_with_hints.  With --expect-refusal it checks instead that
 * shmem_init_thread refuses (a backend the CPU cannot load from, a
 * malformed variable, PEs whose SYMHEAP_SHMEM_PUSH differs); with --level
 * that PEs asking for different thread levels run collectives together. */
#include <pthread.h>
#include <shmem.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "shmem_check.h"

static int me, npes;
int g_initialized = 42;       /* .data */
long g_bss[1000];             /* .bss, several pages */
static double g_static = 1.5; /* .data, file scope */

static void test_query(void) {
  shc_begin("setup_query");
  int major = 0, minor = 0, provided = -1;
  char name[SHMEM_MAX_NAME_LEN];
  shmem_info_get_version(&major, &minor);
  SHC_CHECK(major == SHMEM_MAJOR_VERSION && minor == SHMEM_MINOR_VERSION &&
                major == 1 && minor == 5,
            "version %d.%d", major, minor);
  name[0] = 0;
  shmem_info_get_name(name);
  SHC_CHECK(strlen(name) > 0 && strlen(name) < SHMEM_MAX_NAME_LEN, "name");
  shmem_query_thread(&provided);
  SHC_CHECK(provided == SHMEM_THREAD_MULTIPLE, "thread level %d", provided);
  SHC_CHECK(me >= 0 && me < npes && npes >= 1, "my_pe %d n_pes %d", me, npes);
  static int pes[64];
  static int mine;
  mine = me;
  shmem_int_fcollect(SHMEM_TEAM_WORLD, pes, &mine, 1);
  for (int p = 0; p < npes; p++)
    SHC_CHECK(pes[p] == p, "PE numbers are 0..n-1");
  for (int p = 0; p < npes; p++)
    SHC_CHECK(shmem_pe_accessible(p), "pe_accessible(%d)", p);
  SHC_CHECK(!shmem_pe_accessible(npes) && !shmem_pe_accessible(-1),
            "pe_accessible out of range");
  shc_end();
}

static void test_statics(void) {
  static int local_static;
  shc_begin("setup_symmetric_statics");
  SHC_CHECK(g_initialized == 42 && g_static == 1.5,
            "initialised data survives shmem_init");
  shmem_barrier_all(); /* everyone has looked before the puts below */
  int right = (me + 1) % npes, left = (me + npes - 1) % npes;
  long src[1000];
  for (int i = 0; i < 1000; i++)
    src[i] = me * 10000 + i;
  shmem_long_put(g_bss, src, 1000, right);
  shmem_int_p(&local_static, me + 7, right);
  shmem_double_p(&g_static, me + 0.25, right);
  shmem_barrier_all();
  for (int i = 0; i < 1000; i++)
    SHC_CHECK(g_bss[i] == left * 10000 + i, "bss [%d]", i);
  SHC_CHECK(local_static == left + 7, "static local");
  SHC_CHECK(g_static == left + 0.25, "static global");
  SHC_CHECK(shmem_int_g(&g_initialized, right) == 42, "g of initialised data");
  int stack_var = 0;
  int *heap_var = malloc(sizeof(int));
  SHC_CHECK(shmem_addr_accessible(&g_initialized, right), "static accessible");
  SHC_CHECK(!shmem_addr_accessible(&stack_var, right), "stack not accessible");
  SHC_CHECK(!shmem_addr_accessible(heap_var, right), "malloc not accessible");
  SHC_CHECK(shmem_ptr(&stack_var, right) == NULL, "shmem_ptr of the stack");
  free(heap_var);
  long *p = shmem_ptr(g_bss, right);
  if (shc_same_host(me, right))
    SHC_CHECK(p && p[5] == me * 10000 + 5, "shmem_ptr to a peer's bss");
  else /* another host: no address, as the specification allows */
    SHC_CHECK(!p, "shmem_ptr to another host's PE is %p, not NULL", (void *)p);
  shmem_barrier_all();
  shc_end();
}

/* shmem_align at 4 KiB to 1 MiB: every PE gets an object, aligned here and
 * symmetric (a put through this PE's pointer lands in the neighbour's
 * object).  Before, the padding came from this PE's address: at 8 KiB the
 * offsets differed between PEs in one run in three, from 32 KiB in most;
 * then, agreed but with heaps that started page-aligned only, 8 KiB and
 * more were refused in most runs (every heap now starts 2 MiB-aligned). */
static void test_align(void) {
  shc_begin("setup_align");
  static int given, everywhere;
  int right = (me + 1) % npes, left = (me + npes - 1) % npes;
  for (size_t align = 4096; align <= ((size_t)1 << 20); align *= 2) {
    long *p = shmem_align(align, 64);
    given = p != NULL;
    shmem_barrier_all();
    shmem_int_sum_reduce(SHMEM_TEAM_WORLD, &everywhere, &given, 1);
    SHC_CHECK(everywhere == 0 || everywhere == npes,
              "shmem_align(%zu) gave an object on %d of %d PEs", align,
              everywhere, npes);
    SHC_CHECK(p != NULL, "shmem_align(%zu) refused", align);
    if (!p || everywhere != npes) {
      shmem_free(p);
      continue;
    }
    SHC_CHECK(((uintptr_t)p & (align - 1)) == 0, "align(%zu) gives %p", align,
              (void *)p);
    *p = -1;
    shmem_barrier_all();
    shmem_long_p(p, 1000 + me, right);
    shmem_barrier_all();
    SHC_CHECK(*p == 1000 + left,
              "shmem_align(%zu): PE %d's put landed elsewhere (here %ld)", align,
              left, *p);
    shmem_free(p);
  }
  shc_end();
}

/* PEs that ask shmem_malloc for different sizes all get NULL, and the
 * heap stays symmetric: the next object gets a neighbour's put.  Before,
 * PE 1 (4096 bytes more) carved its heap differently, every later object
 * lay at another offset there, and puts landed elsewhere, silently. */
static void test_mismatched_alloc(void) {
  shc_begin("setup_alloc_mismatched");
  int right = (me + 1) % npes, left = (me + npes - 1) % npes;
  void *odd = shmem_malloc(me == 1 % npes ? 64 + 4096 : 64);
  SHC_CHECK(npes == 1 || odd == NULL, "mismatched sizes gave %p", odd);
  shmem_free(odd);
  long *p = shmem_malloc(64);
  SHC_CHECK(p != NULL, "the next allocation");
  if (p) {
    *p = -1;
    shmem_barrier_all();
    shmem_long_p(p, 1000 + me, right);
    shmem_barrier_all();
    SHC_CHECK(*p == 1000 + left, "PE %d's put landed elsewhere (here %ld)",
              left, *p);
  }
  shmem_free(p);
  /* shmem_realloc with another size, another object or NULL on one PE:
   * NULL on every PE, every object kept (before: asymmetric heaps, or
   * shmem_malloc's collectives against the others' realloc). */
  long *a = shmem_malloc(64), *b = shmem_malloc(64);
  SHC_CHECK(a && b, "two objects");
  if (npes > 1) {
    long *r = shmem_realloc(a, me == 1 % npes ? 128 : 256);
    SHC_CHECK(r == NULL, "realloc to mismatched sizes gave %p", (void *)r);
    r = shmem_realloc(me == 1 % npes ? b : a, 128);
    SHC_CHECK(r == NULL, "realloc of mismatched objects gave %p", (void *)r);
    r = shmem_realloc(me == 1 % npes ? NULL : a, 128);
    SHC_CHECK(r == NULL, "realloc of NULL beside objects gave %p", (void *)r);
    /* a and b are still live and symmetric: a put through a lands in a */
    *a = -1;
    shmem_barrier_all();
    shmem_long_p(a, 2000 + me, right);
    shmem_barrier_all();
    SHC_CHECK(*a == 2000 + left, "a after the refused reallocs: %ld", *a);
  }
  shmem_free(b);
  shmem_free(a);
  shc_end();
}

static void test_memory(void) {
  shc_begin("setup_memory");
  int right = (me + 1) % npes, left = (me + npes - 1) % npes;
  SHC_CHECK(shmem_malloc(0) == NULL, "malloc(0)");
  int *a = shmem_malloc(100 * sizeof(int));
  int *z = shmem_calloc(3000, sizeof(int));
  double *al = shmem_align(4096, 64);
  long *h = shmem_malloc_with_hints(128, SHMEM_MALLOC_ATOMICS_REMOTE);
  SHC_CHECK(a && z && al && h, "allocations");
  SHC_CHECK(((uintptr_t)al & 4095) == 0, "align(4096) gives %p", (void *)al);
  for (int i = 0; i < 3000; i++)
    SHC_CHECK(z[i] == 0, "calloc zeroed [%d]", i);
  SHC_CHECK(shmem_addr_accessible(a, right) && shmem_ptr(a, me) == a,
            "heap accessible");
  for (int i = 0; i < 100; i++)
    a[i] = me * 1000 + i;
  shmem_barrier_all();
  int got[100];
  shmem_int_get(got, a, 100, right);
  for (int i = 0; i < 100; i++)
    SHC_CHECK(got[i] == right * 1000 + i, "get from the same symmetric object");
  int *b = shmem_realloc(a, 5000 * sizeof(int));
  SHC_CHECK(b != NULL, "realloc");
  for (int i = 0; i < 100; i++)
    SHC_CHECK(b[i] == me * 1000 + i, "realloc kept [%d]", i);
  shmem_int_p(&b[4999], me, right);
  shmem_long_atomic_add(&h[0], 1, 0);
  shmem_barrier_all();
  SHC_CHECK(b[4999] == left, "the reallocated object is symmetric");
  if (me == 0)
    SHC_CHECK(h[0] == npes, "hinted memory takes atomics");
  shmem_free(z);
  /* What was freed is taken again (same first fit everywhere). */
  int *z2 = shmem_malloc(3000 * sizeof(int));
  SHC_CHECK(z2 && (char *)z2 <= (char *)z, "freed space reused");
  shmem_int_p(&z2[2999], 5, right);
  shmem_barrier_all();
  SHC_CHECK(z2[2999] == 5, "put into reused space");
  shmem_free(z2);
  shmem_free(b);
  shmem_free(al);
  shmem_free(h);
  shmem_free(NULL);
  /* Larger than the heap: NULL, on every PE. */
  SHC_CHECK(shmem_malloc((size_t)1 << 40) == NULL, "huge malloc is NULL");
  shc_end();
}

static long t_counter;
static void *adder(void *arg) {
  (void)arg;
  for (int i = 0; i < 500; i++)
    shmem_long_atomic_inc(&t_counter, 0);
  return NULL;
}

static void test_threads(void) {
  shc_begin("setup_thread_multiple");
  pthread_t t[2];
  for (int i = 0; i < 2; i++)
    pthread_create(&t[i], NULL, adder, NULL);
  for (int i = 0; i < 2; i++)
    pthread_join(t[i], NULL);
  shmem_barrier_all();
  SHC_CHECK(shmem_long_g(&t_counter, 0) == 1000L * npes, "counter %ld",
            shmem_long_g(&t_counter, 0));
  shc_end();
}

/* --level single|multiple: the PEs ask for different thread levels (the
 * specification lets each ask for its own) and run a pushed-size broadcast,
 * an fcollect and a reduction; every PE then runs the barrier forms
 * (init.c, same_collectives).  Before, the eager PEs and the one under
 * SHMEM_THREAD_MULTIPLE waited for each other in the first broadcast. */
static int levels_mixed(int level) {
  int provided = -1;
  if (shmem_init_thread(level, &provided) != 0)
    return printf("FAIL levels_mixed shmem_init_thread failed\n"), 1;
  me = shmem_my_pe();
  npes = shmem_n_pes();
  shc_begin("levels_mixed_agree");
  SHC_CHECK(provided == level, "provided %d, asked %d", provided, level);
  long *src = shmem_malloc(4 * sizeof(long));
  long *dst = shmem_malloc(4 * sizeof(long) * (size_t)npes);
  for (int i = 0; i < 4; i++)
    src[i] = 100L * me + i;
  shmem_barrier_all();
  shmem_long_broadcast(SHMEM_TEAM_WORLD, dst, src, 4, npes - 1);
  for (int i = 0; i < 4; i++)
    SHC_CHECK(dst[i] == 100L * (npes - 1) + i, "broadcast [%d] = %ld", i,
              dst[i]);
  shmem_barrier_all();
  shmem_long_fcollect(SHMEM_TEAM_WORLD, dst, src, 4);
  for (int i = 0; i < 4 * npes; i++)
    SHC_CHECK(dst[i] == 100L * (i / 4) + i % 4, "fcollect [%d] = %ld", i,
              dst[i]);
  shmem_barrier_all();
  shmem_long_sum_reduce(SHMEM_TEAM_WORLD, dst, src, 4);
  for (int i = 0; i < 4; i++)
    SHC_CHECK(dst[i] == 100L * npes * (npes - 1) / 2 + (long)npes * i,
              "sum [%d] = %ld", i, dst[i]);
  shmem_barrier_all();
  shmem_free(dst);
  shmem_free(src);
  shc_end();
  shmem_finalize();
  return shc_status();
}

int main(int argc, char **argv) {
  int provided = -1;
  if (argc > 2 && strcmp(argv[1], "--level") == 0)
    return levels_mixed(strcmp(argv[2], "multiple") == 0 ? SHMEM_THREAD_MULTIPLE
                                                         : SHMEM_THREAD_SINGLE);
  if (argc > 1 && strcmp(argv[1], "--expect-refusal") == 0) {
    int rc = shmem_init_thread(SHMEM_THREAD_SINGLE, &provided);
    printf("%s init_refused%s\n", rc != 0 ? "PASS" : "FAIL",
           rc != 0 ? "" : " shmem_init_thread succeeded");
    if (rc == 0)
      shmem_finalize();
    return rc != 0 ? 0 : 1;
  }
  if (shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided) != 0) {
    printf("FAIL setup_init shmem_init_thread failed\n");
    return 1;
  }
  me = shmem_my_pe();
  npes = shmem_n_pes();
  test_query();
  test_statics();
  test_memory();
  test_align();
  test_mismatched_alloc();
  test_threads();
  shmem_finalize();
  /* Statics stay usable after finalize. */
  g_bss[0] = 3;
  return shc_status() || g_bss[0] != 3;
}
