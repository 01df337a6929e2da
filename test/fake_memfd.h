/* What the fake drivers share: a real driver imports only memory it made,
 * so the fakes import only their own memfds. */
#ifndef SYMHEAP_TEST_FAKE_MEMFD_H
#define SYMHEAP_TEST_FAKE_MEMFD_H

#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

/* Like a real driver, only its own memory imports: a descriptor of a memfd
 * this fake made (the name below), not any regular file or another
 * program's memfd (the conformance kit's import_refuses_foreign). */
static inline int own_memfd(int fd, const char *name) {
  char link[64], target[256];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, target, sizeof target - 1);
  if (n <= 0)
    return 0;
  target[n] = '\0';
  char want[64];
  int w = snprintf(want, sizeof want, "/memfd:%s", name);
  return strncmp(target, want, (size_t)w) == 0 &&
         (target[w] == '\0' || target[w] == ' ');
}

#endif
