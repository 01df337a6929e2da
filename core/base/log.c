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

/* Open the log without ever blocking: a FIFO with no reader would hang the
 * open, and one whose reader stops would hang every later line, so only
 * regular files and terminals/devices (/dev/stderr, /dev/null) are taken. */
static FILE *open_log(const char *path, const char **why) {
  int fd =
      open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NONBLOCK, 0644);
  struct stat st;
  *why = NULL;
  if (fd < 0) {
    *why = errno == ENXIO ? "it is a FIFO or socket nobody reads"
                          : strerror(errno);
    return NULL;
  }
  if (fstat(fd, &st) != 0 || (!S_ISREG(st.st_mode) && !S_ISCHR(st.st_mode))) {
    *why = "it is not a regular file or a terminal (a FIFO or socket could "
           "block the program)";
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
