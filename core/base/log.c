/* The logger: quiet by default, one line per message, pid and rank on each,
 * to stderr or SYMHEAP_DEBUG_FILE.  Nothing else in symheap writes to
 * stderr. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "config.h"

static atomic_int log_level = SYMHEAP_LOG_WARN;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *log_file; /* NULL: stderr */
static char log_path[512];
static pthread_once_t log_once = PTHREAD_ONCE_INIT;
static _Thread_local int tls_rank = -1;

static const char *level_name[] = {"NONE", "WARN", "INFO", "TRACE"};

/* %p becomes the pid.  0 when the result does not fit: a truncated path
 * would name another file. */
static int expand_path(const char *in, char *out, size_t len) {
  size_t o = 0;
  for (const char *p = in; *p; p++) {
    if (p[0] == '%' && p[1] == 'p') {
      int n = snprintf(out + o, len - o, "%d", (int)getpid());
      if (n < 0 || (size_t)n >= len - o)
        return 0;
      o += (size_t)n;
      p++;
    } else {
      if (o + 1 >= len)
        return 0;
      out[o++] = *p;
    }
  }
  out[o] = '\0';
  return 1;
}

/* Kernel interfaces, not storage (statfs f_type, linux/magic.h): a file
 * there is regular to fstat, yet a write to it fails or, as root, tells
 * the kernel something (/proc/sys, /sys/.../enabled).  /proc/version was
 * taken as a log. */
static int pseudo_type(unsigned long type) {
  static const unsigned long magic[] = {
      0x9fa0,     /* proc */
      0x62656572, /* sysfs */
      0x27e0eb,   /* cgroup */
      0x63677270, /* cgroup2 */
      0x64626720, /* debugfs */
      0x74726163, /* tracefs */
      0x73636673, /* securityfs */
      0x62656570, /* configfs */
      0xcafe4a11, /* bpf */
      0xde5e81e4, /* efivarfs */
      0x6165676c, /* pstore */
      0x65735543, /* fusectl */
      0x42494e4d, /* binfmt_misc */
      0xf97cff8c, /* selinuxfs */
      0x958458f6, /* hugetlbfs: whole huge pages, no write() */
  };
  for (size_t i = 0; i < sizeof magic / sizeof magic[0]; i++)
    if (type == magic[i])
      return 1;
  return 0;
}

#define PSEUDO_FS_WHY                                                          \
  "it is a kernel interface (/proc, /sys and the like), not a file on "      \
  "storage"

static int pseudo_fs(int fd) {
  struct statfs fs;
  return fstatfs(fd, &fs) == 0 && pseudo_type((unsigned long)fs.f_type);
}

/* Why fd cannot be the log, or NULL.  Taken: regular files on storage, a
 * terminal, /dev/null.  A FIFO or socket could block the program; other
 * devices (/dev/full, /dev/mem, a disk) are not logs. */
static const char *not_a_log(int fd) {
  struct stat st;
  if (fstat(fd, &st) != 0)
    return strerror(errno);
  if (S_ISCHR(st.st_mode)) {
    int null = major(st.st_rdev) == 1 && minor(st.st_rdev) == 3;
    return null || isatty(fd) ? NULL
                              : "it is a device other than a terminal or "
                                "/dev/null";
  }
  if (!S_ISREG(st.st_mode))
    return "it is not a regular file or a terminal (a FIFO or socket could "
           "block the program)";
  if (pseudo_fs(fd))
    return PSEUDO_FS_WHY;
  return NULL;
}

/* Open the log without ever blocking: a FIFO with no reader would hang the
 * open, and one whose reader stops would hang every later line, so only
 * what not_a_log takes is kept. */
static FILE *open_log(const char *path, const char **why) {
  /* Asked before the open too: a user without write access there hears
   * what the path is, not only EACCES. */
  struct statfs fs;
  if (statfs(path, &fs) == 0 && pseudo_type((unsigned long)fs.f_type)) {
    *why = PSEUDO_FS_WHY;
    return NULL;
  }
  int fd =
      open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NONBLOCK, 0644);
  *why = NULL;
  if (fd < 0) {
    *why = errno == ENXIO ? "it is a FIFO or socket nobody reads, or a "
                            "device that is not there"
                          : strerror(errno);
    return NULL;
  }
  if ((*why = not_a_log(fd)) != NULL) {
    close(fd);
    return NULL;
  }
  int flags = fcntl(fd, F_GETFL);
  if (flags >= 0)
    (void)fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  FILE *f = fdopen(fd, "a");
  if (!f) {
    *why = strerror(errno);
    close(fd);
  }
  return f;
}

symheap_result_t symheap__log_configure(void) {
  int level;
  const char *file;
  symheap_result_t r = symheap__cfg_choice("SYMHEAP_DEBUG", &level);
  if (r != SYMHEAP_SUCCESS)
    return r;
  r = symheap__cfg_string("SYMHEAP_DEBUG_FILE", &file);
  if (r != SYMHEAP_SUCCESS)
    return r;
  pthread_mutex_lock(&log_lock);
  char path[sizeof log_path] = "";
  if (file && !expand_path(file, path, sizeof path)) {
    pthread_mutex_unlock(&log_lock);
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "SYMHEAP_DEBUG_FILE: the path is longer than %zu "
                          "characters (after %%p)",
                          sizeof path - 1);
  }
  if (strcmp(path, log_path) != 0) {
    if (log_file)
      fclose(log_file);
    log_file = NULL;
    snprintf(log_path, sizeof log_path, "%s", path);
    if (path[0]) {
      const char *why;
      log_file = open_log(path, &why);
      if (!log_file) {
        log_path[0] = '\0';
        pthread_mutex_unlock(&log_lock);
        return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                              "SYMHEAP_DEBUG_FILE='%s' cannot be the log: %s",
                              path, why);
      }
    }
  }
  pthread_mutex_unlock(&log_lock);
  atomic_store(&log_level, level);
  return SYMHEAP_SUCCESS;
}

static void configure_once(void) {
  /* A malformed value is reported by symheap_comm_init, which validates
   * every variable; here the previous level stays. */
  SYMHEAP__KEEP_ERROR((void)symheap__log_configure());
}

int symheap__log_enabled(int level) {
  pthread_once(&log_once, configure_once);
  return level <= atomic_load(&log_level);
}

void symheap__log_set_rank(int rank) { tls_rank = rank; }

void symheap__log(int level, const char *fmt, ...) {
  if (!symheap__log_enabled(level))
    return;
  char line[1200];
  int n;
  if (tls_rank >= 0)
    n = snprintf(line, sizeof line, "symheap %d r%d %s: ", (int)getpid(),
                 tls_rank, level_name[level]);
  else
    n = snprintf(line, sizeof line, "symheap %d %s: ", (int)getpid(),
                 level_name[level]);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
  va_end(ap);
  size_t len = strlen(line);
  line[len++] = '\n';
  line[len] = '\0';
  pthread_mutex_lock(&log_lock);
  FILE *f = log_file ? log_file : stderr;
  fputs(line, f);
  fflush(f);
  pthread_mutex_unlock(&log_lock);
}
