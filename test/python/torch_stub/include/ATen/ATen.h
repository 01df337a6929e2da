// Stand-in for what allocator.cpp uses of ATen/c10 (torch_stub/README.md):
// devices, intrusive_ptr as shared_ptr, c10::Error, TORCH_CHECK.
#pragma once
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
namespace c10 {
enum class DeviceType { CPU, CUDA };
struct Device {
  Device(DeviceType, int) {}
};
template <class T> using intrusive_ptr = std::shared_ptr<T>;
template <class T, class... A> std::shared_ptr<T> make_intrusive(A &&...a) {
  return std::make_shared<T>(std::forward<A>(a)...);
}
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
template <class... A> std::string str(A &&...a) {
  std::ostringstream o;
  (o << ... << a);
  return o.str();
}
} // namespace c10
#define TORCH_CHECK(cond, ...)                                                 \
  do {                                                                         \
    if (!(cond))                                                               \
      throw c10::Error(c10::str(__VA_ARGS__));                                 \
  } while (0)
