/* symheap._fast: the compiled entry of the package's hot calls (issue 30).
 *
 * ctypes costs ~1.8 us for a call of 9 arguments, and finding a tensor's
 * window by a Python scan grows with the live windows; this module takes
 * plain integers (pointers, sizes, codes) in one METH_FASTCALL call, finds
 * the windows with symheap_window_find (O(log n)) and makes the C call.
 * It links against nothing: the package hands it the addresses of the
 * library functions that ctypes already loaded (bind, bind_cuda), so it
 * always calls the very library the rest of the package uses.  Where this
 * file cannot be compiled the package does the same through ctypes.
 *
 * all_reduce_t takes the tensors themselves (bind_torch): their accessors
 * and the current stream are read from C, and the windows come from a
 * small cache by (address, bytes) that forget() empties whenever a window
 * of this process is made or released (window.py), so the Python entry is
 * one call with no argument parsing of its own. */
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

/* bind_torch's: {torch dtype: (symheap_dtype_t, itemsize)}, {op name: code},
 * {algo name: code}, and torch._C._cuda_getCurrentRawStream. */
static PyObject *t_dtypes, *t_ops, *t_algos, *t_stream;
static PyObject *s_data_ptr, *s_numel, *s_is_contiguous, *s_get_device,
    *s_dtype; /* interned attribute names */

/* locate()'s answers by (address, bytes), direct-mapped; emptied by
 * forget().  An answer never outlives the window it names: every window of
 * this process is made and released through window.py, which forgets. */
#define CACHE_SLOTS 64
static struct {
  size_t ptr, n, off;
  void *win;
} cache[CACHE_SLOTS];

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

static size_t slot_of(size_t ptr, size_t n) {
  return ((ptr >> 8) ^ (ptr >> 20) ^ n) % CACHE_SLOTS;
}

/* locate() through the cache. */
static int locate_cached(PyObject *comms, size_t ptr, size_t n,
                         const char *what, void **win, size_t *off) {
  size_t k = slot_of(ptr, n);
  if (cache[k].win && cache[k].ptr == ptr && cache[k].n == n) {
    *win = cache[k].win;
    *off = cache[k].off;
    return 0;
  }
  Py_ssize_t ci;
  if (locate(comms, ptr, n, what, win, off, &ci))
    return -1;
  cache[k].ptr = ptr;
  cache[k].n = n;
  cache[k].off = *off;
  cache[k].win = *win;
  return 0;
}

static PyObject *py_forget(PyObject *self, PyObject *unused) {
  (void)self;
  (void)unused;
  memset(cache, 0, sizeof cache);
  Py_RETURN_NONE;
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

static PyObject *py_bind_torch(PyObject *self, PyObject *args) {
  (void)self;
  PyObject *d, *o, *a, *st;
  if (!PyArg_ParseTuple(args, "O!O!O!O", &PyDict_Type, &d, &PyDict_Type, &o,
                        &PyDict_Type, &a, &st))
    return NULL;
  if (!s_data_ptr) {
    s_data_ptr = PyUnicode_InternFromString("data_ptr");
    s_numel = PyUnicode_InternFromString("numel");
    s_is_contiguous = PyUnicode_InternFromString("is_contiguous");
    s_get_device = PyUnicode_InternFromString("get_device");
    s_dtype = PyUnicode_InternFromString("dtype");
    if (!s_data_ptr || !s_numel || !s_is_contiguous || !s_get_device ||
        !s_dtype)
      return NULL;
  }
  Py_INCREF(d);
  Py_INCREF(o);
  Py_INCREF(a);
  Py_INCREF(st);
  Py_XSETREF(t_dtypes, d);
  Py_XSETREF(t_ops, o);
  Py_XSETREF(t_algos, a);
  Py_XSETREF(t_stream, st);
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

/* obj.name() as a size_t; 0 or -1 (error set, or *decline where the
 * answer is not an integer: the Python entry then decides). */
static int call_size(PyObject *obj, PyObject *name, size_t *out) {
  PyObject *v = PyObject_CallMethodObjArgs(obj, name, NULL);
  if (!v)
    return -1;
  int ok = PyLong_Check(v);
  unsigned long long x = ok ? PyLong_AsUnsignedLongLong(v) : 0;
  Py_DECREF(v);
  if (!ok || (x == (unsigned long long)-1 && PyErr_Occurred())) {
    PyErr_Clear();
    return 1;
  }
  *out = (size_t)x;
  return 0;
}

/* 1 when obj.is_contiguous() is True, 0 when not, -1 on error. */
static int contiguous(PyObject *obj) {
  PyObject *v = PyObject_CallMethodObjArgs(obj, s_is_contiguous, NULL);
  if (!v)
    return -1;
  int r = v == Py_True;
  Py_DECREF(v);
  return r;
}

/* What all_reduce_t needs of its tensors, or 1 to decline (the Python
 * entry then checks and refuses with its own messages). */
struct ar_args {
  size_t pi, po, count, nbytes, stream;
  int dtype, op, algo;
};

static int dict_int(PyObject *dict, PyObject *key, int *out) {
  PyObject *v = PyDict_GetItemWithError(dict, key); /* borrowed */
  if (!v)
    return PyErr_Occurred() ? -1 : 1;
  if (PyTuple_Check(v) && PyTuple_GET_SIZE(v) > 0)
    v = PyTuple_GET_ITEM(v, 0);
  long x = PyLong_Check(v) ? PyLong_AsLong(v) : -1;
  if (x < 0 || x > INT32_MAX) {
    PyErr_Clear();
    return 1;
  }
  *out = (int)x;
  return 0;
}

static int ar_read(PyObject *t, PyObject *out, PyObject *op, PyObject *algo,
                   struct ar_args *a) {
  int r;
  PyObject *dt = PyObject_GetAttr(t, s_dtype);
  if (!dt)
    return -1;
  PyObject *entry = PyDict_GetItemWithError(t_dtypes, dt); /* borrowed */
  r = entry ? dict_int(t_dtypes, dt, &a->dtype) : (PyErr_Occurred() ? -1 : 1);
  if (r == 0 && out != t) { /* same dtype object: torch's are singletons */
    PyObject *odt = PyObject_GetAttr(out, s_dtype);
    if (!odt)
      r = -1;
    else
      r = odt == dt ? 0 : 1;
    Py_XDECREF(odt);
  }
  Py_DECREF(dt);
  if (r)
    return r;
  if (!PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) < 2)
    return 1;
  long esz = PyLong_AsLong(PyTuple_GET_ITEM(entry, 1));
  if ((r = dict_int(t_ops, op, &a->op)) ||
      (r = dict_int(t_algos, algo, &a->algo)))
    return r;
  if ((r = contiguous(t)) != 1 || (out != t && (r = contiguous(out)) != 1))
    return r < 0 ? -1 : 1;
  if ((r = call_size(t, s_numel, &a->count)))
    return r;
  if (out != t) {
    size_t on;
    if ((r = call_size(out, s_numel, &on)))
      return r;
    if (on != a->count)
      return 1;
  }
  a->nbytes = a->count * (size_t)esz;
  if ((r = call_size(t, s_data_ptr, &a->pi)))
    return r;
  a->po = a->pi;
  if (out != t && (r = call_size(out, s_data_ptr, &a->po)))
    return r;
  PyObject *dev = PyObject_CallMethodObjArgs(t, s_get_device, NULL);
  if (!dev)
    return -1;
  long di = PyLong_Check(dev) ? PyLong_AsLong(dev) : -1;
  PyObject *st =
      di >= 0 ? PyObject_CallFunctionObjArgs(t_stream, dev, NULL) : NULL;
  Py_DECREF(dev);
  if (di < 0) {
    PyErr_Clear();
    return 1; /* not on a device: the Python entry refuses it */
  }
  if (!st)
    return -1;
  r = PyLong_Check(st) ? 0 : 1;
  a->stream = r ? 0 : (size_t)PyLong_AsUnsignedLongLong(st);
  Py_DECREF(st);
  if (PyErr_Occurred())
    return -1;
  return r;
}

/* all_reduce_t(comms, tensor, out, op, algo): symheap_cuda_all_reduce of
 * torch tensors on torch's current stream (out None: in place).  None when
 * enqueued; NotImplemented when these arguments are for the Python entry
 * to check (a dtype, op or algo not in bind_torch's tables, a tensor that
 * is not contiguous, shapes that differ, a tensor not on a device). */
static PyObject *py_all_reduce_t(PyObject *self, PyObject *const *a,
                                 Py_ssize_t n) {
  (void)self;
  if (n != 5) {
    PyErr_SetString(PyExc_TypeError,
                    "all_reduce_t(comms, tensor, out, op, algo)");
    return NULL;
  }
  if (!bound(1) || !t_dtypes) {
    PyErr_SetString(PyExc_RuntimeError, "symheap._fast: bind_torch first");
    return NULL;
  }
  PyObject *t = a[1], *out = a[2] == Py_None ? a[1] : a[2];
  struct ar_args x;
  int r = ar_read(t, out, a[3], a[4], &x);
  if (r < 0)
    return NULL;
  if (r > 0)
    Py_RETURN_NOTIMPLEMENTED;
  void *wi, *wo;
  size_t oi, oo;
  if (locate_cached(a[0], x.pi, x.nbytes, "all_reduce input", &wi, &oi) ||
      locate_cached(a[0], x.po, x.nbytes, "all_reduce output", &wo, &oo))
    return NULL;
  r = all_reduce(wi, oi, wo, oo, x.count, x.dtype, x.op, x.algo,
                 (void *)(uintptr_t)x.stream);
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
    {"bind_torch", py_bind_torch, METH_VARARGS,
     "bind_torch(dtypes, ops, algos, current_raw_stream): all_reduce_t's "
     "tables"},
    {"all_reduce_t", (PyCFunction)(void (*)(void))py_all_reduce_t,
     METH_FASTCALL,
     "all_reduce_t(comms, tensor, out, op, algo): None, or NotImplemented "
     "for the Python entry to check"},
    {"forget", py_forget, METH_NOARGS,
     "forget(): empty the window cache (a window was made or released)"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "symheap._fast",
                                    "symheap's compiled hot path", -1,
                                    methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__fast(void) { return PyModule_Create(&module); }
