// symheap.torch: the "SYMHEAP" backend of PyTorch's SymmetricMemory
// (torch/csrc/distributed/c10d/symm_mem/SymmetricMemory.hpp, torch >= 2.9).
// Member functions are declared without `override` on purpose: the base
// classes gained and lost members between 2.9 and 2.11 (get_offset,
// get_signal_pad_size, has_allocation), and a definition the base lacks is
// then a plain member instead of a compile error.
#pragma once

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/symm_mem/SymmetricMemory.hpp>

#include "signal.h"

#include <cstdint>
#include <string>
#include <vector>

extern "C" {
#include "symheap.h"
}

namespace symheap_torch {

// Bytes of signal pad beside every allocation: PyTorch's ops index it as
// uint32 [channel][world_size] (32 channels x 72 ranks x 4 bytes = 9216 on
// 2.11; 2048 before): 16 KiB covers both.
constexpr size_t kSignalPadBytes = 16384;
constexpr size_t kAlign = 256;

class SymheapSymmetricMemory
    : public c10d::symmetric_memory::SymmetricMemory {
 public:
  // `table`: device memory for the three pointer/rank arrays (in the
  // allocation itself, so a rendezvous makes no cudaMalloc and a handle's
  // end no cudaFree, which would synchronise the device).
  SymheapSymmetricMemory(std::vector<void*> bufs, std::vector<void*> pads,
                         size_t size, int rank, int world, int device,
                         std::vector<int> global, bool all_local,
                         void* table);
  ~SymheapSymmetricMemory() override = default;
  // Bytes of table for `world` ranks.
  static size_t table_bytes(int world) {
    return (size_t)world * (2 * sizeof(void*) + sizeof(int));
  }

  std::vector<void*> get_buffer_ptrs() { return bufs_; }
  std::vector<void*> get_signal_pad_ptrs() { return pads_; }
  void** get_buffer_ptrs_dev() { return bufs_dev_; }
  void** get_signal_pad_ptrs_dev() { return pads_dev_; }
  size_t get_buffer_size() { return size_; }
  size_t get_signal_pad_size() { return kSignalPadBytes; }
  size_t get_offset() { return 0; }
  bool has_multicast_support() { return false; }
  void* get_multicast_ptr() { return nullptr; }
  void barrier(int channel, size_t timeout_ms);
  void put_signal(int dst_rank, int channel, size_t timeout_ms);
  void wait_signal(int src_rank, int channel, size_t timeout_ms);
  int get_rank() { return rank_; }
  int get_world_size() { return world_; }
  c10::Device get_device() { return c10::Device(c10::DeviceType::CUDA, device_); }
  const std::vector<int>& get_rank_to_global_rank() { return global_; }
  int* get_rank_to_global_rank_dev() { return global_dev_; }
  bool world_within_direct_access() { return all_local_; }

 private:
  std::vector<void*> bufs_, pads_;
  void** bufs_dev_ = nullptr;
  void** pads_dev_ = nullptr;
  size_t size_;
  int rank_, world_, device_;
  std::vector<int> global_;
  int* global_dev_ = nullptr;
  bool all_local_;
};

}  // namespace symheap_torch
