/* symheap_window_find: the window of a comm holding an address, and the
 * offset in it (issue 30).  Every byte of a window found, one past the end
 * not; nested windows give the innermost; freed windows and another comm's
 * are not found; refusals; and 2000 windows against a linear walk.
 *   build/test/test_window_find --threads 2
 *   build/bin/symheap-run -n 2 build/test/test_window_find */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "harness.h"

static void expect(th_ctx_t *c, const void *p, symheap_window_t want,
                   size_t want_off, const char *what) {
  symheap_window_t got = NULL;
  size_t off = 1;
  symheap_result_t r = symheap_window_find(c->comm, p, &got, &off);
  if (!want) {
    CHECK(r == SYMHEAP_ERR_INVALID_ARG && got == NULL,
          "%s: found %p (%s)", what, (void *)got, symheap_strerror(r));
    return;
  }
  CHECK(r == SYMHEAP_SUCCESS && got == want && off == want_off,
        "%s: %s, window %p offset %zu, expected %p offset %zu (%s)", what,
        symheap_strerror(r), (void *)got, off, (void *)want, want_off,
        symheap_last_error());
}

static char *local(symheap_window_t w) {
  void *p = NULL;
  CHECK_OK(symheap_window_local_ptr(w, &p));
  return p;
}

static void case_bounds(th_ctx_t *c) {
  symheap_window_t a, b;
  CHECK_OK(symheap_malloc(c->comm, 1000, 0, &a));
  CHECK_OK(symheap_malloc(c->comm, 1 << 20, 0, &b));
  char *pa = local(a), *pb = local(b);
  expect(c, pa, a, 0, "a's first byte");
  expect(c, pa + 999, a, 999, "a's last byte");
  expect(c, pb + 12345, b, 12345, "inside b");
  expect(c, pb + (1 << 20) - 1, b, (1 << 20) - 1, "b's last byte");
  expect(c, pb + (1 << 20), NULL, 0, "one past b");
  expect(c, NULL, NULL, 0, "NULL");
  symheap_window_t w;
  size_t off;
  CHECK_ERR(symheap_window_find(c->comm, pa, NULL, &off),
            SYMHEAP_ERR_INVALID_ARG);
  CHECK_ERR(symheap_window_find(c->comm, pa, &w, NULL),
            SYMHEAP_ERR_INVALID_ARG);
  CHECK_ERR(symheap_window_find(NULL, pa, &w, &off), SYMHEAP_ERR_INVALID_ARG);
  CHECK_OK(symheap_free(c->comm, a));
  expect(c, pa, NULL, 0, "a after its free");
  expect(c, pb, b, 0, "b after a's free");
  CHECK_OK(symheap_free(c->comm, b));
  expect(c, pb + 1, NULL, 0, "b after its free");
}

/* A window registered over part of a heap block lies inside it. */
static void case_nested(th_ctx_t *c) {
  symheap_window_t outer, inner;
  CHECK_OK(symheap_malloc(c->comm, 8192, 0, &outer));
  char *p = local(outer);
  CHECK_OK(symheap_window_register(c->comm, p + 1024, 512, 0, &inner));
  expect(c, p + 1100, inner, 76, "inside the inner window");
  expect(c, p + 100, outer, 100, "before the inner window");
  expect(c, p + 2000, outer, 2000, "after the inner window");
  expect(c, p + 1024 + 512, outer, 1536, "one past the inner window");
  CHECK_OK(symheap_window_deregister(c->comm, inner));
  expect(c, p + 1100, outer, 1100, "after the inner one went");
  CHECK_OK(symheap_free(c->comm, outer));
}

/* Another comm's windows are not this comm's. */
static void case_other_comm(th_ctx_t *c) {
  symheap_comm_t sub;
  CHECK_OK(symheap_comm_split(c->comm, 0, c->rank, &sub));
  symheap_window_t w;
  CHECK_OK(symheap_malloc(sub, 4096, 0, &w));
  char *p = local(w);
  expect(c, p + 8, NULL, 0, "the sub-comm's window from the parent");
  symheap_window_t got;
  size_t off;
  CHECK_OK(symheap_window_find(sub, p + 8, &got, &off));
  CHECK(got == w && off == 8, "from the sub-comm: %p %zu", (void *)got, off);
  CHECK_OK(symheap_free(sub, w));
  CHECK_OK(symheap_comm_destroy(sub));
  CHECK_ERR(symheap_window_find(sub, p, &got, &off), SYMHEAP_ERR_INVALID_ARG);
}

/* Many windows, freed in a scattered order: every lookup agrees with a
 * linear walk over what is live. */
static void case_many(th_ctx_t *c) {
  enum { N = 2000 };
  symheap_window_t *w = calloc(N, sizeof *w);
  char **p = calloc(N, sizeof *p);
  size_t *len = calloc(N, sizeof *len);
  for (int i = 0; i < N; i++) {
    len[i] = 64 + (size_t)(i % 7) * 200;
    CHECK_OK(symheap_malloc(c->comm, len[i], 0, &w[i]));
    p[i] = local(w[i]);
  }
  for (int i = 0; i < N; i += 3) { /* free every third */
    CHECK_OK(symheap_free(c->comm, w[i]));
    w[i] = NULL;
  }
  int bad = 0;
  for (int i = 0; i < N && bad < 5; i++) {
    size_t off = (size_t)(i * 37) % len[i];
    symheap_window_t want = w[i];
    symheap_window_t got = NULL;
    size_t goff = 0;
    symheap_result_t r = symheap_window_find(c->comm, p[i] + off, &got, &goff);
    if (want ? (r != SYMHEAP_SUCCESS || got != want || goff != off)
             : r != SYMHEAP_ERR_INVALID_ARG) {
      bad++;
      CHECK(0, "window %d offset %zu: %s %p %zu", i, off,
            symheap_strerror(r), (void *)got, goff);
    }
  }
  for (int i = N - 1; i >= 0; i--)
    if (w[i])
      CHECK_OK(symheap_free(c->comm, w[i]));
  free(w);
  free(p);
  free(len);
}

int main(int argc, char **argv) {
  static const th_case_t cases[] = {{"bounds", case_bounds},
                                    {"nested", case_nested},
                                    {"other_comm", case_other_comm},
                                    {"many", case_many}};
  static const th_suite_t suite = {"window_find ", NULL, cases,
                                   sizeof cases / sizeof cases[0]};
  return th_main_suite(argc, argv, &suite);
}
