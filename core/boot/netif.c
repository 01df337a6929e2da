/* Which address rank 0 offers the other hosts: SYMHEAP_SOCKET_IFNAME's
 * interface, read like NCCL_SOCKET_IFNAME, or the first that looks like a
 * network (up, not loopback, with an address); loopback when the host has
 * nothing else, so a one-host TCP job still runs. */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "base/config.h"
#include "sock_tcp.h"

int symheap__ifname_match(const char *spec, const char *name) {
  int exclude = 0, exact = 0;
  if (*spec == '^') {
    exclude = 1;
    spec++;
  }
  if (*spec == '=') {
    exact = 1;
    spec++;
  }
  int hit = 0;
  while (*spec && !hit) {
    size_t n = strcspn(spec, ",");
    if (n > 0)
      hit = exact ? strlen(name) == n && strncmp(name, spec, n) == 0
                  : strncmp(name, spec, n) == 0;
    spec += n;
    if (*spec == ',')
      spec++;
  }
  return exclude ? !hit : hit;
}

static int usable(const struct ifaddrs *i) {
  return i->ifa_addr && (i->ifa_flags & IFF_UP) &&
         (i->ifa_addr->sa_family == AF_INET ||
          i->ifa_addr->sa_family == AF_INET6);
}

static void addr_text(const struct ifaddrs *i, char *ip, size_t len) {
  if (i->ifa_addr->sa_family == AF_INET)
    inet_ntop(AF_INET, &((struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr,
              ip, (socklen_t)len);
  else
    inet_ntop(AF_INET6,
              &((struct sockaddr_in6 *)(void *)i->ifa_addr)->sin6_addr, ip,
              (socklen_t)len);
}

/* The best interface by `spec` (NULL: any but loopback), IPv4 before IPv6
 * (a link-local IPv6 address needs a scope the text would not carry). */
static const struct ifaddrs *choose(const struct ifaddrs *all,
                                    const char *spec) {
  const struct ifaddrs *v6 = NULL;
  for (const struct ifaddrs *i = all; i; i = i->ifa_next) {
    if (!usable(i))
      continue;
    if (spec ? !symheap__ifname_match(spec, i->ifa_name)
             : (i->ifa_flags & IFF_LOOPBACK) != 0)
      continue;
    if (i->ifa_addr->sa_family == AF_INET)
      return i;
    const struct in6_addr *a =
        &((struct sockaddr_in6 *)(void *)i->ifa_addr)->sin6_addr;
    if (!v6 && !IN6_IS_ADDR_LINKLOCAL(a))
      v6 = i;
  }
  return v6;
}

/* The names of the interfaces that are up with an address, each once, for
 * a refusal to list ("none" when there are none). */
static void usable_names(const struct ifaddrs *all, char *out, size_t len) {
  size_t at = 0;
  out[0] = '\0';
  for (const struct ifaddrs *i = all; i && at + 1 < len; i = i->ifa_next) {
    int seen = 0;
    for (const struct ifaddrs *j = all; j != i && !seen; j = j->ifa_next)
      seen = usable(j) && strcmp(j->ifa_name, i->ifa_name) == 0;
    if (!usable(i) || seen)
      continue;
    int n = snprintf(out + at, len - at, "%s%s", at ? ", " : "", i->ifa_name);
    at += n > 0 ? (size_t)n : 0;
  }
  if (!out[0])
    snprintf(out, len, "none");
}

symheap_result_t symheap__tcp_pick_addr(char *ip, size_t len, char *ifname) {
  const char *spec = NULL;
  symheap_result_t r = symheap__cfg_string("SYMHEAP_SOCKET_IFNAME", &spec);
  if (r != SYMHEAP_SUCCESS)
    return r;
  struct ifaddrs *all;
  if (getifaddrs(&all) != 0)
    return symheap__error(SYMHEAP_ERR_SYSTEM, "getifaddrs failed");
  const struct ifaddrs *i = choose(all, spec);
  if (!i && !spec)
    i = choose(all, "lo"); /* nothing else: this host alone */
  if (!i) {
    char names[256];
    usable_names(all, names, sizeof names);
    freeifaddrs(all);
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "SYMHEAP_SOCKET_IFNAME='%s' admits no interface "
                          "that is up with an address (this host's: %s); it "
                          "is comma-separated name prefixes, '^' first to "
                          "exclude them, '=' first for exact names",
                          spec ? spec : "", names);
  }
  addr_text(i, ip, len);
  snprintf(ifname, 16, "%s", i->ifa_name);
  freeifaddrs(all);
  return SYMHEAP_SUCCESS;
}
