// symheap.torch's allocator: PyTorch's SymmetricMemoryAllocator over a
// symheap comm.  PyTorch calls alloc and free locally, lazily and in a
// different order on each rank; only rendezvous is collective.  So:
//   alloc      symheap_mem_alloc (local) of the buffer and its signal pad,
//              or an allocation of the same size this rank freed before;
//   rendezvous symheap_window_register (collective) once per allocation,
//              the handle cached on the allocation (a second rendezvous is
//              a lookup); a range registered before on every rank is the
//              core's cached re-registration;
//   free       symheap_window_release_local (local: docs/torch.md), then the
//              memory goes to a small per-size pool or symheap_mem_free.
// One mutex serialises every symheap call (a comm belongs to one thread at a
// time, and the garbage collector may free from another).
#include "symm_mem.hpp"

#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/extension.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <unordered_map>

namespace symheap_torch {

using c10d::symmetric_memory::SymmetricMemory;

#define SH_CHECK(call, what)                                              \
  do {                                                                    \
    symheap_result_t r_ = (call);                                         \
    TORCH_CHECK(r_ == SYMHEAP_SUCCESS, "symheap.torch: ", what, ": ",     \
                symheap_strerror(r_), ": ", symheap_last_error());        \
  } while (0)

#define CU_CHECK(call)                                                    \
  do {                                                                    \
    cudaError_t e_ = (call);                                              \
    TORCH_CHECK(e_ == cudaSuccess, "symheap.torch: ", #call, ": ",        \
                cudaGetErrorString(e_));                                  \
  } while (0)

SymheapSymmetricMemory::SymheapSymmetricMemory(
    std::vector<void*> bufs, std::vector<void*> pads, size_t size, int rank,
    int world, int device, std::vector<int> global, bool all_local,
    void* table)
    : bufs_(std::move(bufs)), pads_(std::move(pads)), size_(size),
      rank_(rank), world_(world), device_(device), global_(std::move(global)),
      all_local_(all_local) {
  std::vector<char> host(table_bytes(world_));
  size_t nb = world_ * sizeof(void*);
  std::memcpy(host.data(), bufs_.data(), nb);
  std::memcpy(host.data() + nb, pads_.data(), nb);
  std::memcpy(host.data() + 2 * nb, global_.data(), world_ * sizeof(int));
  c10::cuda::CUDAGuard g(device_);
  // On the current stream (where the allocation's pad was cleared), not a
  // cudaMemcpy: that one runs on the legacy stream and so waits for all of
  // the device's work.  From pageable memory the call returns once `host`
  // is staged, so it may go out of scope.
  CU_CHECK(cudaMemcpyAsync(table, host.data(), host.size(),
                           cudaMemcpyHostToDevice,
                           c10::cuda::getCurrentCUDAStream()));
  bufs_dev_ = static_cast<void**>(table);
  pads_dev_ = reinterpret_cast<void**>(static_cast<char*>(table) + nb);
  global_dev_ = reinterpret_cast<int*>(static_cast<char*>(table) + 2 * nb);
}

void SymheapSymmetricMemory::barrier(int channel, size_t timeout_ms) {
  c10::cuda::CUDAGuard g(device_);
  launch_barrier(reinterpret_cast<uint32_t**>(pads_dev_), rank_, world_,
                 channel, timeout_ms, c10::cuda::getCurrentCUDAStream());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

void SymheapSymmetricMemory::put_signal(int dst, int channel,
                                        size_t timeout_ms) {
  TORCH_CHECK(dst >= 0 && dst < world_ && dst != rank_,
              "symheap.torch: put_signal to rank ", dst, " of ", world_);
  c10::cuda::CUDAGuard g(device_);
  launch_put_signal(reinterpret_cast<uint32_t**>(pads_dev_), rank_, world_,
                    dst, channel, timeout_ms,
                    c10::cuda::getCurrentCUDAStream());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

void SymheapSymmetricMemory::wait_signal(int src, int channel,
                                         size_t timeout_ms) {
  TORCH_CHECK(src >= 0 && src < world_ && src != rank_,
              "symheap.torch: wait_signal from rank ", src, " of ", world_);
  c10::cuda::CUDAGuard g(device_);
  launch_wait_signal(reinterpret_cast<uint32_t**>(pads_dev_), rank_, world_,
                     src, channel, timeout_ms,
                     c10::cuda::getCurrentCUDAStream());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

static size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }
static size_t pad_offset(size_t size) { return round_up(size ? size : 1, kAlign); }

struct Allocation {
  size_t size = 0;   // what PyTorch asked for
  size_t total = 0;  // buffer rounded up + signal pad
  symheap_window_t win = nullptr;
  c10::intrusive_ptr<SymmetricMemory> symm;
};

// symheap.torch.init (Python), which knows every launcher (symheap-run,
// mpirun, torchrun: symheap/_torchrun.py); set at import, never released
// (it must outlive the allocator, which lives until exit).
static PyObject* g_bootstrap = nullptr;

class SymheapAllocator
    : public c10d::symmetric_memory::SymmetricMemoryAllocator {
 public:
  // Collective over the symheap-run job (or MPI job): symheap_comm_init_env
  // with `device` current, so the cuda adaptor follows it.
  void init(int device) {
    std::lock_guard<std::mutex> l(mu_);
    init_locked(device, nullptr, 0, 0);
  }

  // Collective over `size` ranks sharing `uid` (torchrun: the id came
  // through torch's store).  Idempotent, like init.
  void init_uid(int device, int rank, int size, const std::string& uid) {
    TORCH_CHECK(uid.size() == sizeof(symheap_unique_id_t),
                "symheap.torch: a unique id has ",
                sizeof(symheap_unique_id_t), " bytes, not ", uid.size());
    symheap_unique_id_t id;
    std::memcpy(id.bytes, uid.data(), sizeof id.bytes);
    std::lock_guard<std::mutex> l(mu_);
    init_locked(device, &id, rank, size);
  }

  bool initialized() {
    std::lock_guard<std::mutex> l(mu_);
    return comm_ != nullptr;
  }

  void* alloc(size_t size, int device_idx,
              const std::optional<std::string>& group_name) {
    (void)group_name;  // one comm serves every group of the whole job
    // symm_mem.empty(..., device="cuda") carries no index: the current one.
    if (device_idx < 0) CU_CHECK(cudaGetDevice(&device_idx));
    ensure_init(device_idx);
    std::lock_guard<std::mutex> l(mu_);
    init_locked(device_idx, nullptr, 0, 0);
    TORCH_CHECK(device_idx == device_,
                "symheap.torch: the comm is on cuda:", device_,
                ", this allocation asks for cuda:", device_idx);
    // [buffer, rounded][signal pad][pointer tables, this rank's only]
    size_t total = round_up(size ? size : 1, kAlign) + kSignalPadBytes +
                   round_up(SymheapSymmetricMemory::table_bytes(nranks_),
                            kAlign);
    c10::cuda::CUDAGuard g(device_);
    void* p = nullptr;
    auto it = pool_.find(total);
    if (it != pool_.end()) {
      p = it->second;
      pool_.erase(it);
      pooled_--;
    } else {
      SH_CHECK(symheap_mem_alloc(comm_, total, &p), "symheap_mem_alloc");
    }
    // A signal pad starts zero (PyTorch's ops rely on it); the stream that
    // will use the tensor is the current one.
    CU_CHECK(cudaMemsetAsync(static_cast<char*>(p) + pad_offset(size), 0,
                             kSignalPadBytes,
                             c10::cuda::getCurrentCUDAStream()));
    Allocation a;
    a.size = size;
    a.total = total;
    allocs_.emplace(p, std::move(a));
    return p;
  }

  void free(void* ptr) {
    std::lock_guard<std::mutex> l(mu_);
    auto it = allocs_.find(ptr);
    if (it == allocs_.end() || !comm_) return;  // not ours, or after teardown
    Allocation a = std::move(it->second);
    allocs_.erase(it);
    a.symm.reset();
    c10::cuda::CUDAGuard g(device_);
    // Kernels still queued on this rank may use the memory (not while a
    // stream is being captured: that would end the capture).
    cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    (void)cudaStreamIsCapturing(c10::cuda::getCurrentCUDAStream(), &cs);
    if (cs == cudaStreamCaptureStatusNone) (void)cudaDeviceSynchronize();
    if (a.win) (void)symheap_window_release_local(comm_, a.win);
    if (pooled_ < pool_max_) {
      pool_.emplace(a.total, ptr);
      pooled_++;
    } else {
      (void)symheap_mem_free(comm_, ptr);
    }
  }

  size_t get_alloc_size(void* ptr) {
    std::lock_guard<std::mutex> l(mu_);
    auto it = allocs_.find(ptr);
    TORCH_CHECK(it != allocs_.end(),
                "symheap.torch: ", ptr, " is not a SYMHEAP allocation");
    return it->second.size;
  }

  bool has_allocation(void* ptr) {
    std::lock_guard<std::mutex> l(mu_);
    return allocs_.count(ptr) != 0;
  }

  c10::intrusive_ptr<SymmetricMemory> rendezvous(
      void* ptr, const std::optional<std::string>& group_name) {
    std::lock_guard<std::mutex> l(mu_);
    auto it = allocs_.find(ptr);
    TORCH_CHECK(it != allocs_.end(), "symheap.torch: rendezvous of ", ptr,
                ", which symm_mem.empty did not allocate on SYMHEAP");
    Allocation& a = it->second;
    if (a.symm) return a.symm;
    check_group(group_name);
    c10::cuda::CUDAGuard g(device_);
    SH_CHECK(symheap_window_register(comm_, ptr, a.total, 0, &a.win),
             "symheap_window_register (rendezvous)");
    std::vector<void*> bufs(nranks_), pads(nranks_);
    for (int p = 0; p < nranks_; p++) {
      void* q = nullptr;
      if (symheap_window_peer_ptr(a.win, p, &q) != SYMHEAP_SUCCESS) q = nullptr;
      if (p == rank_) q = ptr;  // this rank's own address, not its alias
      bufs[p] = q;
      pads[p] = q ? static_cast<char*>(q) + pad_offset(a.size) : nullptr;
    }
    a.symm = c10::make_intrusive<SymheapSymmetricMemory>(
        bufs, pads, a.size, rank_, nranks_, device_, global_, all_local_,
        static_cast<char*>(ptr) + pad_offset(a.size) + kSignalPadBytes);
    return a.symm;
  }

  bool has_multicast_support(int) { return false; }
  c10::DeviceType supported_device_type() { return c10::DeviceType::CUDA; }
  std::string name() { return "SYMHEAP"; }

  std::map<std::string, int64_t> info() {
    std::lock_guard<std::mutex> l(mu_);
    std::map<std::string, int64_t> m;
    m["initialized"] = comm_ != nullptr;
    m["rank"] = rank_;
    m["nranks"] = nranks_;
    m["device"] = device_;
    m["allocations"] = (int64_t)allocs_.size();
    m["pooled"] = (int64_t)pooled_;
    if (comm_) {
      symheap_comm_stats_t s = SYMHEAP_COMM_STATS_INIT;
      if (symheap_comm_get_stats(comm_, &s) == SYMHEAP_SUCCESS) {
        m["windows_live"] = (int64_t)s.windows_live;
        m["allocations_live"] = (int64_t)s.allocations_live;
        m["mappings_cached"] = (int64_t)s.mappings_cached;
      }
    }
    return m;
  }

 private:
  // The first allocation before any init: the Python bootstrap (every
  // launcher), outside mu_ (it calls init or init_uid, which take it).
  void ensure_init(int device) {
    if (initialized() || !g_bootstrap) return;
    pybind11::gil_scoped_acquire gil;
    pybind11::handle hook(g_bootstrap);
    hook(device);
  }

  // id NULL: symheap_comm_init_env (symheap-run, mpirun).
  void init_locked(int device, const symheap_unique_id_t* id, int rank,
                   int size) {
    if (comm_) return;
    c10::cuda::CUDAGuard g(device);
    CU_CHECK(cudaFree(nullptr));  // the device's context, current here
    if (id)
      SH_CHECK(symheap_comm_init(&comm_, size, id, rank),
               "symheap_comm_init (the unique id from torch's store)");
    else
      SH_CHECK(symheap_comm_init_env(&comm_),
               "symheap_comm_init_env (run under symheap-run, torchrun or "
               "mpirun, and call symheap.torch.init() on every rank)");
    device_ = device;
    SH_CHECK(symheap_comm_rank(comm_, &rank_), "symheap_comm_rank");
    SH_CHECK(symheap_comm_size(comm_, &nranks_), "symheap_comm_size");
    global_.resize(nranks_);
    for (int p = 0; p < nranks_; p++)
      SH_CHECK(symheap_comm_world_rank(comm_, p, &global_[p]),
               "symheap_comm_world_rank");
    std::vector<int> local(nranks_);
    int count = 0;
    SH_CHECK(symheap_comm_local_ranks(comm_, local.data(), nranks_, &count),
             "symheap_comm_local_ranks");
    all_local_ = count == nranks_;
    const char* e = std::getenv("SYMHEAP_TORCH_POOL");
    pool_max_ = e ? (size_t)std::strtoul(e, nullptr, 10) : 8;
  }

  // The group must be the whole job, with the same ranks: peers' pointers
  // are indexed by symheap rank.
  void check_group(const std::optional<std::string>& group_name) {
    std::string name = group_name.value_or("0");
    try {
      auto& gi = c10d::symmetric_memory::get_group_info(name);
      TORCH_CHECK(gi.world_size == nranks_ && gi.rank == rank_,
                  "symheap.torch: group '", name, "' is rank ", gi.rank,
                  " of ", gi.world_size, " but the symheap comm is rank ",
                  rank_, " of ", nranks_,
                  ": SYMHEAP serves groups of the whole job, in job order");
    } catch (const c10::Error& e) {
      if (std::string(e.what()).find("symheap.torch") != std::string::npos)
        throw;
      // No group info recorded for this name: the whole job is assumed.
    }
  }

  std::mutex mu_;
  symheap_comm_t comm_ = nullptr;
  int rank_ = -1, nranks_ = 0, device_ = -1;
  std::vector<int> global_;
  bool all_local_ = true;
  std::unordered_map<void*, Allocation> allocs_;
  std::multimap<size_t, void*> pool_;
  size_t pooled_ = 0, pool_max_ = 8;
};

static c10::intrusive_ptr<SymheapAllocator>& the_allocator() {
  static auto a = c10::make_intrusive<SymheapAllocator>();
  return a;
}

}  // namespace symheap_torch

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  using namespace symheap_torch;
  m.doc() = "symheap.torch: the SYMHEAP backend of torch's SymmetricMemory";
  m.def("register_backend", [] {
    c10d::symmetric_memory::register_availability("SYMHEAP", the_allocator());
  });
  m.def("init", [](int device) { the_allocator()->init(device); },
        "collective: the symheap comm on cuda:device (symheap_comm_init_env)");
  m.def("init_uid",
        [](int device, int rank, int size, pybind11::bytes uid) {
          std::string u = uid;
          pybind11::gil_scoped_release nogil;  // blocks until all joined
          the_allocator()->init_uid(device, rank, size, u);
        },
        "collective: the symheap comm on cuda:device of `size` ranks sharing "
        "`uid` (symheap_comm_init)");
  m.def("unique_id", [] {
    symheap_unique_id_t id;
    SH_CHECK(symheap_get_unique_id(&id), "symheap_get_unique_id");
    return pybind11::bytes(reinterpret_cast<const char*>(id.bytes),
                           sizeof id.bytes);
  });
  m.def("initialized", [] { return the_allocator()->initialized(); });
  m.def("set_bootstrap", [](pybind11::object f) {
    Py_XDECREF(g_bootstrap);
    g_bootstrap = f.release().ptr();  // kept to the end (see g_bootstrap)
  });
  m.def("info", [] { return the_allocator()->info(); });
}
