// Stand-in for torch/extension.h (torch_stub/README.md): pybind11 and ATen.
#pragma once
#include <ATen/ATen.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
