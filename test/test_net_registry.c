/* The registry of net adaptors (core/base/net_registry.c): normalisation of a
 * table (ABI, size, required members, the atomic stub), registration and
 * lookup by name, and a plugin that provides only a net adaptor. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "base/net_registry.h"
#include "comm/net.h"
#include "base/plugin.h"

#define T "net_registry"

static int fake_yes(const symheap_host_services_t *s, char *w, size_t l) {
  (void)s, (void)w, (void)l;
  return 1;
}
static int fake_no(const symheap_host_services_t *s, char *w, size_t l) {
  (void)s;
  snprintf(w, l, "install libfake-net1");
  return 0;
}
static symheap_result_t fake_providers(const symheap_host_services_t *s,
                                       char *b, size_t l) {
  (void)s;
  snprintf(b, l, "loop\n");
  return SYMHEAP_SUCCESS;
}
static symheap_result_t fake_open(const symheap_host_services_t *s,
                                  const symheap_net_init_t *a, void **c,
                                  void *addr, size_t *len) {
  (void)s, (void)a, (void)addr;
  *c = NULL;
  *len = 1;
  return SYMHEAP_SUCCESS;
}
static void fake_close(void *c) { (void)c; }
static symheap_result_t fake_query(void *c, symheap_net_caps_t *caps) {
  (void)c, (void)caps;
  return SYMHEAP_SUCCESS;
}
static symheap_result_t fake_connect(void *c, int n, const void *a, size_t s) {
  (void)c, (void)n, (void)a, (void)s;
  return SYMHEAP_SUCCESS;
}
static symheap_result_t fake_reg(void *c, void *p, size_t s, int d, void **m,
                                 void *k, size_t *kl) {
  (void)c, (void)p, (void)s, (void)d, (void)m, (void)k, (void)kl;
  return SYMHEAP_SUCCESS;
}
static symheap_result_t fake_dereg(void *c, void *m) {
  (void)c, (void)m;
  return SYMHEAP_SUCCESS;
}
static symheap_result_t fake_import(void *c, int p, const void *k, size_t l,
                                    void **r) {
  (void)c, (void)p, (void)k, (void)l, (void)r;
  return SYMHEAP_SUCCESS;
}
static void fake_release(void *c, void *r) { (void)c, (void)r; }
static symheap_result_t fake_put(void *c, int p, const void *s, void *m,
                                 size_t l, void *r, uint64_t o, unsigned f) {
  (void)c, (void)p, (void)s, (void)m, (void)l, (void)r, (void)o, (void)f;
  return SYMHEAP_SUCCESS;
}
static symheap_result_t fake_get(void *c, int p, void *d, void *m, size_t l,
                                 void *r, uint64_t o, unsigned f) {
  (void)c, (void)p, (void)d, (void)m, (void)l, (void)r, (void)o, (void)f;
  return SYMHEAP_SUCCESS;
}
static symheap_result_t fake_ctx(void *c) {
  (void)c;
  return SYMHEAP_SUCCESS;
}
static symheap_result_t fake_quiet(void *c, int t) {
  (void)c, (void)t;
  return SYMHEAP_SUCCESS;
}

static symheap_net_ops fake(const char *name) {
  symheap_net_ops o = {SYMHEAP_ADAPTOR_ABI_VERSION,
                       sizeof(symheap_net_ops),
                       name,
                       fake_yes,
                       fake_providers,
                       fake_open,
                       fake_close,
                       fake_query,
                       fake_connect,
                       fake_reg,
                       fake_dereg,
                       fake_import,
                       fake_release,
                       fake_put,
                       fake_get,
                       NULL,
                       NULL,
                       fake_ctx,
                       fake_quiet,
                       fake_ctx,
                       NULL};
  return o;
}

static int fake_wait_fds(void *c, int *fds, int max) {
  (void)c, (void)max;
  fds[0] = 0;
  return 1;
}

/* The appended wait_fds entry: kept when the table's struct_size covers
 * it, NULL (the core polls progress) for a v1 table, whatever lies past
 * its end; absent in a full table stays absent. */
static void test_wait_fds_entry(void) {
  th_begin(T, "wait_fds_entry", 0);
  symheap__net_table_t t;
  symheap_net_ops o = fake("fake");
  o.wait_fds = fake_wait_fds;
  CHECK_OK(symheap__net_normalise(&o, &t));
  CHECK(t.ops.wait_fds == fake_wait_fds, "present entry lost");
  o.struct_size = offsetof(symheap_net_ops, wait_fds); /* a v1 adaptor */
  CHECK_OK(symheap__net_normalise(&o, &t));
  CHECK(t.ops.wait_fds == NULL, "a v1 table's bytes past its end were read");
  CHECK(t.ops.struct_size == sizeof(symheap_net_ops), "struct_size %u",
        t.ops.struct_size);
  o = fake("fake");
  CHECK_OK(symheap__net_normalise(&o, &t));
  CHECK(t.ops.wait_fds == NULL, "absent entry became present");
  th_end();
}

static void test_normalise(void) {
  th_begin(T, "normalise", 0);
  symheap__net_table_t t;
  CHECK_ERR(symheap__net_normalise(NULL, &t), SYMHEAP_ERR_INVALID_ARG);
  symheap_net_ops o = fake("fake");
  o.abi_version = 99;
  CHECK_ERR(symheap__net_normalise(&o, &t), SYMHEAP_ERR_PLUGIN);
  o = fake("fake");
  o.struct_size = offsetof(symheap_net_ops, quiet);
  CHECK_ERR(symheap__net_normalise(&o, &t), SYMHEAP_ERR_PLUGIN);
  CHECK(strstr(symheap_last_error(), "struct_size"), "%s",
        symheap_last_error());
  o = fake("fake");
  o.quiet = NULL;
  CHECK_ERR(symheap__net_normalise(&o, &t), SYMHEAP_ERR_PLUGIN);
  CHECK(strstr(symheap_last_error(), "'quiet'"), "not named: %s",
        symheap_last_error());
  o = fake("");
  CHECK_ERR(symheap__net_normalise(&o, &t), SYMHEAP_ERR_PLUGIN);
  o = fake("fake");
  CHECK_OK(symheap__net_normalise(&o, &t));
  CHECK(!t.has_atomic && !t.has_put_signal && t.ops.atomic, "atomic stub");
  uint64_t v = 1;
  CHECK_ERR(
      t.ops.atomic(NULL, 0, SYMHEAP_NET_AMO_ADD, 8, NULL, 0, &v, NULL, NULL),
      SYMHEAP_ERR_UNSUPPORTED);
  th_end();
}

static void test_register_lookup(void) {
  th_begin(T, "register_lookup", 0);
  symheap_net_ops a = fake("fakenet"), b = fake("fakeoff");
  b.available = fake_no;
  symheap__builtins_load();
  int before = symheap__net_list(NULL, 0);
  CHECK_OK(symheap_register_net_adaptor(&a));
  CHECK_ERR(symheap_register_net_adaptor(&a), SYMHEAP_ERR_INVALID_ARG);
  CHECK_OK(symheap_register_net_adaptor(&b));
  CHECK(symheap__net_list(NULL, 0) == before + 2, "count %d, expected %d",
        symheap__net_list(NULL, 0), before + 2);
  symheap__net_table_t t;
  CHECK_OK(symheap__net_lookup("fakenet", &t));
  CHECK(strcmp(t.ops.name, "fakenet") == 0, "found %s", t.ops.name);
  CHECK_ERR(symheap__net_lookup("fakeoff", &t), SYMHEAP_ERR_UNSUPPORTED);
  CHECK(strstr(symheap_last_error(), "libfake-net1"), "reason lost: %s",
        symheap_last_error());
  CHECK_ERR(symheap__net_lookup("nosuch", &t), SYMHEAP_ERR_INVALID_ARG);
  CHECK(strstr(symheap_last_error(), "fakenet"), "known not listed: %s",
        symheap_last_error());
  CHECK_OK(symheap__net_lookup("auto", &t)); /* fakenet at least */
  /* SYMHEAP_NET's own words are not adaptor names. */
  symheap_net_ops r = fake("none");
  CHECK_ERR(symheap_register_net_adaptor(&r), SYMHEAP_ERR_INVALID_ARG);
  CHECK(strstr(symheap_last_error(), "reserved"), "%s", symheap_last_error());
  /* SYMHEAP_NET picks a registered adaptor by name (comm/net_select.c);
   * an unknown name lists the accepted ones. */
  int mode = -1;
  setenv("SYMHEAP_NET", "fakenet", 1);
  CHECK_OK(symheap__net_mode(&mode, &t));
  CHECK(mode == SYMHEAP__NET_ADAPTOR && !strcmp(t.ops.name, "fakenet"),
        "mode %d", mode);
  setenv("SYMHEAP_NET", "nosuch", 1);
  CHECK_ERR(symheap__net_mode(&mode, &t), SYMHEAP_ERR_INVALID_ARG);
  CHECK(strstr(symheap_last_error(), "auto, ibverbs, none") &&
            strstr(symheap_last_error(), "fakenet"),
        "%s", symheap_last_error());
  setenv("SYMHEAP_NET", "none", 1);
  CHECK_OK(symheap__net_mode(&mode, &t));
  CHECK(mode == SYMHEAP__NET_NONE, "mode %d", mode);
  unsetenv("SYMHEAP_NET");
  th_end();
}

static symheap_result_t p_init(const symheap_host_services_t *s) {
  (void)s;
  return SYMHEAP_SUCCESS;
}
static void p_fini(void) {}

/* A plugin whose only offering is a net adaptor is admitted (minor 1); one
 * of minor 0's size cannot offer one and, offering nothing, is refused. */
static void test_plugin_net_only(void) {
  th_begin(T, "plugin_net_only", 0);
  static symheap_net_ops o;
  o = fake("fakeplug");
  symheap_plugin_t p = {SYMHEAP_PLUGIN_ABI_MAJOR,
                        SYMHEAP_PLUGIN_ABI_MINOR,
                        sizeof(symheap_plugin_t),
                        "netonly",
                        p_init,
                        p_fini,
                        NULL,
                        NULL,
                        NULL,
                        &o};
  CHECK_OK(symheap__plugin_admit(&p, "test"));
  p.struct_size = offsetof(symheap_plugin_t, net);
  CHECK_ERR(symheap__plugin_admit(&p, "test"), SYMHEAP_ERR_PLUGIN);
  CHECK(strstr(symheap_last_error(), "provides nothing"), "%s",
        symheap_last_error());
  th_end();
}

int main(void) {
  test_normalise();
  test_wait_fds_entry();
  test_register_lookup();
  test_plugin_net_only();
  return th_total_failures() ? 1 : 0;
}
