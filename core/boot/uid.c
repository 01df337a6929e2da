#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/config.h"
#include "uid.h"

symheap_result_t symheap__random(unsigned char *buf, size_t len) {
  size_t got = 0;
  while (got < len) {
    ssize_t n = getrandom(buf + got, len - got, 0);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return symheap__error(SYMHEAP_ERR_SYSTEM, "getrandom: %s",
                            strerror(errno));
    got += (size_t)n;
  }
  return SYMHEAP_SUCCESS;
}

symheap_result_t symheap__ipc_socket_mode(int *abstract, const char **dir) {
  const char *v;
  symheap_result_t r = symheap__cfg_string("SYMHEAP_IPC_SOCKET", &v);
  if (r != SYMHEAP_SUCCESS)
    return r;
  if (strcmp(v, "abstract") == 0) {
    *abstract = 1;
    *dir = "";
    return SYMHEAP_SUCCESS;
  }
  /* Room for "/symheap-<32 hex>-r<rank>.sock" in a 96-byte name. */
  if (v[0] != '/' || strlen(v) > 48)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "SYMHEAP_IPC_SOCKET='%s' is not valid: expected "
                          "'abstract' or an absolute directory path of at most "
                          "48 characters",
                          v);
  /* This rank binds its sockets there: a directory that is missing or
   * closed to it would fail only later, at a bind in the middle of a join
   * (or never, in a comm of one rank). */
  struct stat st;
  const char *why = NULL;
  if (stat(v, &st) != 0)
    why = strerror(errno);
  else if (!S_ISDIR(st.st_mode))
    why = "not a directory";
  else if (access(v, W_OK | X_OK) != 0)
    why = errno == EROFS ? "a read-only file system"
                         : "not writable by this process";
  if (why)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "SYMHEAP_IPC_SOCKET='%s' cannot hold this rank's "
                          "filesystem sockets: %s (it names an existing "
                          "directory this process can write, or 'abstract')",
                          v, why);
  *abstract = 0;
  *dir = v;
  return SYMHEAP_SUCCESS;
}

symheap_result_t symheap__uid_make_unix(symheap_unique_id_t *id) {
  symheap_result_t r;
  symheap__uid_t u;
  memset(&u, 0, sizeof u);
  memcpy(u.magic, SYMHEAP__UID_MAGIC, sizeof u.magic);
  u.version = SYMHEAP__UID_VERSION;
  int abstract;
  const char *dir;
  r = symheap__ipc_socket_mode(&abstract, &dir);
  if (r != SYMHEAP_SUCCESS)
    return r;
  r = symheap__random(u.token, sizeof u.token);
  if (r != SYMHEAP_SUCCESS)
    return r;
  char hex[33];
  symheap__hex(u.token, sizeof u.token, hex);
  u.abstract = (uint32_t)abstract;
  if (abstract)
    snprintf(u.name, sizeof u.name, "symheap-%s", hex);
  else
    snprintf(u.name, sizeof u.name, "%s/symheap-%s.sock", dir, hex);
  memset(id, 0, sizeof *id);
  memcpy(id->bytes, &u, sizeof u);
  return SYMHEAP_SUCCESS;
}

symheap_result_t symheap__uid_decode(const symheap_unique_id_t *id,
                                     symheap__uid_t *out) {
  memcpy(out, id->bytes, sizeof *out);
  if (memcmp(out->magic, SYMHEAP__UID_MAGIC, sizeof out->magic) != 0)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "unique id is not a symheap id (bad magic); make it "
                          "with symheap_get_unique_id");
  if (out->version != SYMHEAP__UID_VERSION)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "unique id has version %u, this library reads %u",
                          out->version, SYMHEAP__UID_VERSION);
  if (out->abstract > SYMHEAP__UID_TCP ||
      memchr(out->name, '\0', sizeof out->name) == NULL || out->name[0] == '\0')
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "unique id is corrupt (bad socket name)");
  return SYMHEAP_SUCCESS;
}

void symheap__uid_to_hex(const symheap_unique_id_t *id, char out[257]) {
  symheap__hex(id->bytes, sizeof id->bytes, out);
}

static int hexval(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

symheap_result_t symheap__uid_from_hex(const char *hex,
                                       symheap_unique_id_t *id) {
  if (strlen(hex) != 2 * sizeof id->bytes)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "SYMHEAP_UNIQUE_ID is not valid: expected %zu hex "
                          "digits, got %zu characters",
                          2 * sizeof id->bytes, strlen(hex));
  for (size_t i = 0; i < sizeof id->bytes; i++) {
    int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);
    if (hi < 0 || lo < 0)
      return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                            "SYMHEAP_UNIQUE_ID is not valid: non-hex character "
                            "at position %zu",
                            hi < 0 ? 2 * i : 2 * i + 1);
    id->bytes[i] = (unsigned char)(hi << 4 | lo);
  }
  return SYMHEAP_SUCCESS;
}
