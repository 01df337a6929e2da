/* TCP unique ids.  As NCCL's, the process that makes the id listens at
 * once, so the address in the id is a port that is already ours: the
 * listener waits here until this process's rank 0 of that job takes it at
 * comm init (or symheap__uid_release drops it).  A launcher's id (deferred)
 * carries only the secret; its rank 0 listens when it joins. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "sock_tcp.h"
#include "uid.h"

#define PENDING_MAX 64

typedef struct {
  unsigned char token[16];
  int fd; /* -1: a free entry */
} pending_t;

static pending_t pending[PENDING_MAX];
static int npending;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static symheap_result_t keep(const unsigned char token[16], int fd) {
  pthread_mutex_lock(&lock);
  int i = 0;
  while (i < npending && pending[i].fd >= 0)
    i++;
  if (i == npending && npending < PENDING_MAX)
    npending++;
  if (i < npending) {
    memcpy(pending[i].token, token, 16);
    pending[i].fd = fd;
  }
  pthread_mutex_unlock(&lock);
  if (i < PENDING_MAX)
    return SYMHEAP_SUCCESS;
  close(fd);
  return symheap__error(SYMHEAP_ERR_NO_MEMORY,
                        "symheap_get_unique_id: %d TCP ids of this process "
                        "wait for their comm already",
                        PENDING_MAX);
}

int symheap__uid_take_listener(const unsigned char token[16]) {
  int fd = -1;
  pthread_mutex_lock(&lock);
  for (int i = 0; i < npending && fd < 0; i++)
    if (pending[i].fd >= 0 && memcmp(pending[i].token, token, 16) == 0) {
      fd = pending[i].fd;
      pending[i].fd = -1;
    }
  pthread_mutex_unlock(&lock);
  return fd;
}

void symheap__uid_release(const symheap_unique_id_t *id) {
  symheap__uid_t u;
  memcpy(&u, id->bytes, sizeof u);
  if (u.abstract != SYMHEAP__UID_TCP)
    return;
  int fd = symheap__uid_take_listener(u.token);
  if (fd >= 0)
    close(fd);
}

symheap_result_t symheap__uid_make_tcp(const char *ip, int deferred,
                                       symheap_unique_id_t *id) {
  symheap__uid_t u;
  memset(&u, 0, sizeof u);
  memcpy(u.magic, SYMHEAP__UID_MAGIC, sizeof u.magic);
  u.version = SYMHEAP__UID_VERSION;
  u.abstract = SYMHEAP__UID_TCP;
  symheap_result_t r = symheap__random(u.token, sizeof u.token);
  if (r != SYMHEAP_SUCCESS)
    return r;
  int fd = -1;
  if (deferred) {
    snprintf(u.name, sizeof u.name, "%s", SYMHEAP__UID_DEFERRED);
  } else {
    char mine[SYMHEAP__TCP_ADDR_MAX], ifname[16] = "";
    if (!ip && (r = symheap__tcp_pick_addr(mine, sizeof mine, ifname)) !=
                   SYMHEAP_SUCCESS)
      return r;
    r = symheap__tcp_listen(ip ? ip : mine, 0, &fd, u.name, sizeof u.name);
    if (r == SYMHEAP_SUCCESS)
      r = keep(u.token, fd);
    if (r != SYMHEAP_SUCCESS)
      return r;
    SYMHEAP_INFO("bootstrap: rank 0 of the new job will listen on %s%s%s%s",
                 u.name, ifname[0] ? " (" : "", ifname, ifname[0] ? ")" : "");
  }
  memset(id, 0, sizeof *id);
  memcpy(id->bytes, &u, sizeof u);
  return SYMHEAP_SUCCESS;
}
