/* TCP for the bootstrap between hosts: rank 0's address (chosen by
 * SYMHEAP_SOCKET_IFNAME), listen, connect with retry, and accept that names
 * the peer's address.  Addresses travel as text, "IPv4:port" or
 * "[IPv6]:port", inside the unique id.  Sends and receives are sock.c's,
 * which work on any stream socket. */
#ifndef SYMHEAP_SOCK_TCP_H
#define SYMHEAP_SOCK_TCP_H

#include <stddef.h>
#include <stdint.h>

#include "base/internal.h"

/* Longest address text, with its NUL ("[v6]:port"). */
#define SYMHEAP__TCP_ADDR_MAX 64

/* This host's address for rank 0 to listen on: the first interface that
 * SYMHEAP_SOCKET_IFNAME admits (prefixes, "^" to exclude, "=" for exact
 * names, as NCCL_SOCKET_IFNAME), else the first up non-loopback interface
 * with an address, else loopback.  *ifname names it (16 bytes). */
symheap_result_t symheap__tcp_pick_addr(char *ip, size_t len, char *ifname);
/* Listen on ip (port 0: any); `addr` receives "ip:port". */
symheap_result_t symheap__tcp_listen(const char *ip, int port, int *fd,
                                     char *addr, size_t len);
/* Connect to "ip:port", retrying while nothing listens yet, until the
 * deadline; Nagle off (the bootstrap's messages are small and waited on). */
symheap_result_t symheap__tcp_connect(const char *addr, int64_t deadline_ms,
                                      int peer, int *fd);
/* Accept one connection before the deadline; `from` receives its address
 * (for the log: a connection that cannot prove the job's secret is named). */
symheap_result_t symheap__tcp_accept(int lfd, int64_t deadline_ms, int *fd,
                                     char *from, size_t len);
/* Split "ip:port" (or "[ip]:port") into its parts; 0 when well formed. */
int symheap__tcp_parse(const char *addr, char *ip, size_t len, int *port);
/* Whether SYMHEAP_SOCKET_IFNAME's spec admits interface `name` (pure, for
 * the unit test). */
int symheap__ifname_match(const char *spec, const char *name);

#endif
