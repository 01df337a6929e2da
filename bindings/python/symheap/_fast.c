/* symheap._fast: the compiled entry of the package's hot calls (issue 30).
 *
 * ctypes costs ~1.8 us for a call of 9 arguments, and finding a tensor's
 * window by a Python scan grows with the live windows; this module takes
 * plain integers (pointers, sizes, codes) in one METH_FASTCALL call, finds
 * the windows with symheap_window_find (O(log n)) and makes the C call.
 * It links against nothing: the package hands it the addresses of the
 * library functions that ctypes already loaded (bind, bind_cuda), so it
 * always calls the very library the rest of the package uses.  Where this
 * file cannot be compiled the package does the same through ctypes. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

typedef int (*find_fn)(void *comm, const void *ptr, void **win, size_t *off);
typedef int (*wsize_fn)(void *win, size_t *size);
typedef int (*csize_fn)(void *comm, int *n);
typedef const char *(*lasterr_fn)(void);
typedef int (*allreduce_fn)(void *wi, size_t oi, void *wo, size_t oo,
                            size_t count, int dtype, int op, int algo,
                            void *stream);
typedef int (*allgather_fn)(void *wi, size_t oi, void *wo, size_t oo,
                            size_t bytes, void *stream);

static find_fn find;
static wsize_fn wsize;
static csize_fn csize;
static lasterr_fn last_error;
static allreduce_fn all_reduce;
static allgather_fn all_gather;
static PyObject *make_error; /* (code, message) -> the package's exception */

/* Sets the package's exception for code; returns NULL. */
static PyObject *fail(int code, const char *what, const char *msg) {
  PyObject *e = PyObject_CallFunction(make_error, "iss", code, what, msg);
  if (e) {
    PyErr_SetObject((PyObject *)Py_TYPE(e), e);
    Py_DECREF(e);
  }
  return NULL;
}

/* Integers that do not fit are refused (the package's InvalidArgError),
 * never truncated. */
static int refuse(const char *range) {
  PyErr_Clear();
  fail(1, NULL, range);
  return -1;
}

static int as_size(PyObject *o, size_t *out) {
  unsigned long long v = PyLong_Check(o) ? PyLong_AsUnsignedLongLong(o) : 0;
  if (!PyLong_Check(o) || (v == (unsigned long long)-1 && PyErr_Occurred()))
    return refuse("an address or size must be an integer in [0, 2**64)");
  *out = (size_t)v;
  return 0;
}

static int as_int(PyObject *o, int *out) {
  long v = PyLong_Check(o) ? PyLong_AsLong(o) : 0;
  if (!PyLong_Check(o) || (v == -1 && PyErr_Occurred()) || v < INT32_MIN ||
      v > INT32_MAX)
    return refuse("a code must be an integer that fits a C int");
  *out = (int)v;
  return 0;
}

/* The window among `comms` (a tuple of comm handles) whose local copy holds
 * [ptr, ptr + n); its comm's index in *ci.  0, or -1 with the error set. */
static int locate(PyObject *comms, size_t ptr, size_t n, const char *what,
                  void **win, size_t *off, Py_ssize_t *ci) {
  if (!PyTuple_Check(comms)) {
    PyErr_SetString(PyExc_TypeError, "comms must be a tuple");
    return -1;
  }
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(comms); i++) {
    void *c = PyLong_AsVoidPtr(PyTuple_GET_ITEM(comms, i));
    if (!c && PyErr_Occurred())
      return -1;
    size_t sz;
    if (find(c, (const void *)ptr, win, off) != 0)
      continue;
    if (wsize(*win, &sz) != 0 || *off > sz || n > sz - *off)
      break; /* starts in a window but runs past its end */
    *ci = i;
    return 0;
  }
  fail(1, what,
       "is not inside a symheap window's local copy (make it with "
       "comm.empty or comm.register)");
  return -1;
}

static PyObject *py_bind(PyObject *self, PyObject *args) {
  (void)self;
  unsigned long long f, ws, cs, le;
  PyObject *mk;
  if (!PyArg_ParseTuple(args, "KKKKO", &f, &ws, &cs, &le, &mk))
    return NULL;
  find = (find_fn)(uintptr_t)f;
  wsize = (wsize_fn)(uintptr_t)ws;
  csize = (csize_fn)(uintptr_t)cs;
  last_error = (lasterr_fn)(uintptr_t)le;
  Py_XDECREF(make_error);
  Py_INCREF(mk);
  make_error = mk;
  Py_RETURN_NONE;
}

static PyObject *py_bind_cuda(PyObject *self, PyObject *args) {
  (void)self;
  unsigned long long ar, ag;
  if (!PyArg_ParseTuple(args, "KK", &ar, &ag))
    return NULL;
  all_reduce = (allreduce_fn)(uintptr_t)ar;
  all_gather = (allgather_fn)(uintptr_t)ag;
  Py_RETURN_NONE;
}

static int bound(int cuda) {
  if (!find || (cuda && !all_reduce)) {
    PyErr_SetString(PyExc_RuntimeError, "symheap._fast is not bound");
    return 0;
  }
  return 1;
}

/* locate(comms, ptr, nbytes) -> (window handle, offset) */
static PyObject *py_locate(PyObject *self, PyObject *const *a, Py_ssize_t n) {
  (void)self;
  size_t ptr, nb, off;
  void *w;
  Py_ssize_t ci;
  if (n != 3) {
    PyErr_SetString(PyExc_TypeError, "locate(comms, ptr, nbytes)");
    return NULL;
  }
  if (!bound(0) || as_size(a[1], &ptr) || as_size(a[2], &nb) ||
      locate(a[0], ptr, nb, "the address", &w, &off, &ci))
    return NULL;
  return Py_BuildValue("(Kn)", (unsigned long long)(uintptr_t)w,
                       (Py_ssize_t)off);
}

/* all_reduce(comms, in, in_bytes, out, out_bytes, count, dtype, op, algo,
 *            stream) */
static PyObject *py_all_reduce(PyObject *self, PyObject *const *a,
                               Py_ssize_t n) {
  (void)self;
  size_t pi, ni, po, no, count, stream, oi, oo;
  int dtype, op, algo;
  void *wi, *wo;
  Py_ssize_t ci;
  if (n != 10) {
    PyErr_SetString(PyExc_TypeError, "all_reduce takes 10 arguments");
    return NULL;
  }
  if (!bound(1) || as_size(a[1], &pi) || as_size(a[2], &ni) ||
      as_size(a[3], &po) || as_size(a[4], &no) || as_size(a[5], &count) ||
      as_int(a[6], &dtype) || as_int(a[7], &op) || as_int(a[8], &algo) ||
      as_size(a[9], &stream))
    return NULL;
  if (locate(a[0], pi, ni, "all_reduce input", &wi, &oi, &ci) ||
      locate(a[0], po, no, "all_reduce output", &wo, &oo, &ci))
    return NULL;
  int r = all_reduce(wi, oi, wo, oo, count, dtype, op, algo,
                     (void *)(uintptr_t)stream);
  if (r)
    return fail(r, NULL, last_error());
  Py_RETURN_NONE;
}

/* all_gather(comms, in, in_bytes, out, out_bytes, stream) */
static PyObject *py_all_gather(PyObject *self, PyObject *const *a,
                               Py_ssize_t n) {
  (void)self;
  size_t pi, ni, po, no, stream, oi, oo;
  void *wi, *wo;
  Py_ssize_t ci;
  int nranks = 0;
  if (n != 6) {
    PyErr_SetString(PyExc_TypeError, "all_gather takes 6 arguments");
    return NULL;
  }
  if (!bound(1) || as_size(a[1], &pi) || as_size(a[2], &ni) ||
      as_size(a[3], &po) || as_size(a[4], &no) || as_size(a[5], &stream))
    return NULL;
  if (locate(a[0], pi, ni, "all_gather input", &wi, &oi, &ci) ||
      locate(a[0], po, no, "all_gather output", &wo, &oo, &ci))
    return NULL;
  void *comm = PyLong_AsVoidPtr(PyTuple_GET_ITEM(a[0], ci));
  if (csize(comm, &nranks) != 0 || (size_t)nranks * ni != no) {
    char msg[160];
    snprintf(msg, sizeof msg, "out has %zu bytes, not %d ranks x %zu", no,
             nranks, ni);
    return fail(1, "all_gather", msg);
  }
  int r = all_gather(wi, oi, wo, oo, ni, (void *)(uintptr_t)stream);
  if (r)
    return fail(r, NULL, last_error());
  Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"bind", py_bind, METH_VARARGS, "bind(find, wsize, csize, last_error, "
                                    "make_error): the library's functions"},
    {"bind_cuda", py_bind_cuda, METH_VARARGS,
     "bind_cuda(all_reduce, all_gather): libsymheap_cuda's"},
    {"locate", (PyCFunction)(void (*)(void))py_locate, METH_FASTCALL,
     "locate(comms, ptr, nbytes) -> (window, offset)"},
    {"all_reduce", (PyCFunction)(void (*)(void))py_all_reduce, METH_FASTCALL,
     "symheap_cuda_all_reduce by addresses"},
    {"all_gather", (PyCFunction)(void (*)(void))py_all_gather, METH_FASTCALL,
     "symheap_cuda_all_gather by addresses"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "symheap._fast",
                                    "symheap's compiled hot path", -1,
                                    methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__fast(void) { return PyModule_Create(&module); }
