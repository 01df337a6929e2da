// Stand-in for the CUDA runtime (test/python/torch_stub/README.md): the
// calls allocator.cpp makes, acting on host memory (stub.cpp).
#pragma once
#include <cstddef>
typedef int cudaError_t;
enum { cudaSuccess = 0 };
typedef struct CUstream_st *cudaStream_t;
enum cudaMemcpyKind { cudaMemcpyHostToDevice = 1 };
enum cudaStreamCaptureStatus { cudaStreamCaptureStatusNone = 0 };
cudaError_t cudaMemcpyAsync(void *, const void *, size_t, cudaMemcpyKind,
                            cudaStream_t);
cudaError_t cudaMemcpy(void *, const void *, size_t, cudaMemcpyKind);
cudaError_t cudaMemsetAsync(void *, int, size_t, cudaStream_t);
cudaError_t cudaFree(void *);
cudaError_t cudaGetDevice(int *);
cudaError_t cudaDeviceSynchronize();
cudaError_t cudaStreamIsCapturing(cudaStream_t, cudaStreamCaptureStatus *);
const char *cudaGetErrorString(cudaError_t);
