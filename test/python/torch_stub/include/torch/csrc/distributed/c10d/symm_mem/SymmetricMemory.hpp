// Stand-in for PyTorch's SymmetricMemory.hpp (torch_stub/README.md): the
// allocator's virtual functions that PyTorch calls (alloc, free, rendezvous)
// so that stub.cpp can call them as PyTorch would.
#pragma once
#include <ATen/ATen.h>
#include <vector>
namespace c10d {
namespace symmetric_memory {
struct SymmetricMemory {
  virtual ~SymmetricMemory() = default;
};
struct SymmetricMemoryAllocator {
  virtual ~SymmetricMemoryAllocator() = default;
  virtual void *alloc(size_t size, int device_idx,
                      const std::optional<std::string> &group_name) = 0;
  virtual void free(void *ptr) = 0;
  virtual c10::intrusive_ptr<SymmetricMemory>
  rendezvous(void *ptr, const std::optional<std::string> &group_name) = 0;
};
void register_availability(const std::string &,
                           c10::intrusive_ptr<SymmetricMemoryAllocator>);
struct GroupInfo {
  int rank;
  int world_size;
};
GroupInfo &get_group_info(const std::string &);
} // namespace symmetric_memory
} // namespace c10d
