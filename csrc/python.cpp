// warpreduce_torch._C: importing it loads this library, which runs the TORCH_LIBRARY
// registrations of the other files. It also binds the call itself,
// sum(input, dim=None, keepdim=False, *, dtype=None, kernel="auto"), so that
// warpreduce_torch.sum reaches the op without torch.ops' boxed path, and plan(input, dim),
// which describes how a sum would run.
//
// Why a binding: torch.ops.warpreduce.sum turns each Python argument into an IValue
// against the schema, then unboxes them again: on the GPU machine's host a small call
// through it cost about as much as a whole torch.sum, and 1-2 us more than through a
// direct binding (benchmarks/host_overhead.py, RESULTS.md). The binding makes the same
// typed dispatcher call that a C++ caller would, so autograd, torch.func's transforms,
// dispatch modes, fake tensors and functionalization all still apply;
// warpreduce_torch.sum takes torch.ops whenever Python must see the call
// (torch.compile, __torch_function__ overrides).
//
// Why torch's own argument parser (the one behind torch.sum) rather than pybind11's:
// wrong arguments raise what torch.sum raises, a TypeError that names the argument types
// and never prints the tensor (pybind11's message prints the whole input), and it parses
// dtype= too, so that every plain call takes this path.
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/utils/pybind.h>
#include <torch/csrc/utils/python_arg_parser.h>

#include "launch_model.h"
#include "ops.h"

namespace warpreduce {
namespace {

// The dim argument, which the parser has checked is None, an int, or a tuple or list
// whose first element is an int. Read here rather than with PythonArgs::intlistOptional,
// whose error path formats with fmt, which libtorch keeps to itself: the library then
// fails to load with "undefined symbol: fmt::v12::vformat".
std::optional<std::vector<int64_t>> dims_arg(PyObject* dim) {
  if (dim == nullptr || dim == Py_None) return std::nullopt;
  if (!PyTuple_Check(dim) && !PyList_Check(dim))
    return std::vector<int64_t>{THPUtils_unpackIndex(dim)};
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(dim);
  std::vector<int64_t> dims(n);
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* item = PySequence_Fast_GET_ITEM(dim, i);
    TORCH_CHECK_TYPE(PyIndex_Check(item),
                     "sum(): argument 'dim' must be tuple of ints, but found element of type ",
                     Py_TYPE(item)->tp_name, " at pos ", i + 1);
    dims[i] = THPUtils_unpackIndex(item);
  }
  return dims;
}

PyObject* sum_binding(PyObject* /*module*/, PyObject* args, PyObject* kwargs) {
  HANDLE_TH_ERRORS
  static torch::PythonArgParser parser({
      "sum(Tensor input, IntArrayRef[1]? dim=None, bool keepdim=False, *, "
      "ScalarType? dtype=None, c10::string_view kernel=\"auto\")",
  });
  torch::ParsedArgs<5> parsed;
  torch::PythonArgs r = parser.parse(args, kwargs, parsed);
  // warpreduce::sum only forwards to _sum or _exact_sum (ops.cpp): call that, one
  // dispatch fewer.
  const at::Tensor input = r.tensor(0);
  const auto dims = dims_arg(r.args[1]);
  const bool keepdim = r.toBool(2);
  const auto dtype = r.scalartypeOptional(3);
  const auto kernel = r.stringView(4);
  at::Tensor result;
  {
    const pybind11::gil_scoped_release no_gil;  // as torch's own bindings do
    result = call_sum_op(input, dims ? at::OptionalIntArrayRef(*dims) : std::nullopt, keepdim,
                         dtype, kernel);
  }
  return THPVariable_Wrap(std::move(result));
  END_HANDLE_TH_ERRORS
}

// A lane's running sum's bytes in pass k of an auto sum of a t tensor (acc_t of the
// pass's elements, sum_traits.h: float up to 4-byte floats, double, int64 for integers),
// what run_pass.cuh gives the launch model.
int64_t pass_acc_bytes(at::ScalarType t, size_t k) {
  if (at::isIntegralType(t, /*includeBool=*/true)) return 8;
  return std::max<int64_t>(4, pass_element_bytes(t, k));
}

// How warpreduce.sum(x, dim) would run: the plan's passes (geometry.h) as dicts, each with
// the GPU launch the launch model chooses for it (launch_model.h) on a device of `sms`
// multiprocessors (an H100's or H200's by default), for the tests and the benchmarks.
// Runs no kernel. Where kept dims are expanded, the passes are those of the smaller sum
// and "broadcast" lists those dims. as_cuda: the plan a CUDA tensor of x's layout gets
// (gapped rows, the output order), on any machine.
pybind11::dict describe_plan(const at::Tensor& x, std::optional<std::vector<int64_t>> dim,
                             int64_t sms, bool as_cuda) {
  const SumPlan plan = make_plan(x, dim ? at::OptionalIntArrayRef(*dim) : std::nullopt,
                                 /*keepdim=*/false, std::nullopt, "auto", as_cuda);
  pybind11::list passes;
  DeviceShape device;
  device.sms = sms;
  for (size_t k = 0; k < plan.passes.size(); ++k) {
    const ReductionPass& p = plan.passes[k];
    // The first pass reads the input in place; the rest read aligned scratch.
    const ElementShape element{
        pass_element_bytes(plan.input.scalar_type(), k),
        k == 0 ? reinterpret_cast<uintptr_t>(plan.input.const_data_ptr()) : 0,
        k + 1 == plan.passes.size() ? static_cast<int64_t>(c10::elementSize(plan.out_dtype)) : 0,
        /*auto_sums=*/true, pass_acc_bytes(plan.input.scalar_type(), k)};
    pybind11::list outer;
    for (int d = 0; d < p.outer.ndim; ++d)
      outer.append(pybind11::make_tuple(p.outer.sizes[d], p.outer.strides[d]));
    pybind11::dict pass;
    pass["kind"] = p.is_rows() ? "rows" : "columns";
    pass["outer"] = outer;
    pass["length"] = p.length;
    pass["reduced_stride"] = p.reduced_stride;
    pass["inner"] = p.inner;
    pass["inner_stride"] = p.inner_stride;
    pass["repeat"] = p.repeat;
    pass["gaps"] = pybind11::make_tuple(p.period, p.width);
    pass["slices"] = pybind11::make_tuple(p.slices, p.slice_stride);
    pass["slack"] = p.slack;
    pass["outer_outputs_adjacent"] = p.outer_outputs_adjacent;
    pass["result_apart"] = p.result_apart;
    pass["packed_rows"] = p.packed_rows();
    pass["even_rows"] = p.even_rows();
    pass["launch"] = choose_launch(p, element, device).describe();
    passes.append(pass);
  }
  // The passes after the first run in the first's launch (choose_tail: the first pass
  // writes carries), or "".
  TailLaunch tail;
  if (plan.passes.size() >= 2) {
    const ReductionPass& first = plan.passes[0];
    const int64_t bytes = pass_element_bytes(plan.input.scalar_type(), 0);
    const ElementShape element{bytes, reinterpret_cast<uintptr_t>(plan.input.const_data_ptr()),
                               pass_element_bytes(plan.input.scalar_type(), 1)};
    tail = choose_tail(first, choose_launch(first, element, device), bytes,
                       c10::ArrayRef<ReductionPass>(plan.passes).slice(1), device);
  }
  pybind11::dict out;
  out["passes"] = passes;
  out["tail"] = tail.describe();
  out["copied"] = plan.copied;
  out["needs_kernel"] = !plan.result.has_value();
  // The input's kept dims of stride 0 that the passes see at size 1: their sum copied out.
  out["broadcast"] = std::vector<int64_t>(plan.broadcast_dims.begin(), plan.broadcast_dims.end());
  // Where the last pass writes each output when it writes torch.sum's result at once
  // (SumPlan::output_order): (size, stride) digits, and copies along a broadcast dim.
  pybind11::list order;
  for (int d = 0; d < plan.output_order.ndim; ++d)
    order.append(pybind11::make_tuple(plan.output_order.sizes[d], plan.output_order.strides[d]));
  out["output_order"] = order;
  out["output_copies"] = pybind11::make_tuple(plan.output_copies, plan.output_copy_stride);
  return out;
}

PyMethodDef methods[] = {
    {"sum", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(sum_binding)),
     METH_VARARGS | METH_KEYWORDS,
     "sum(input, dim=None, keepdim=False, *, dtype=None, kernel='auto'): warpreduce::sum, "
     "without __torch_function__ handling (warpreduce_torch.sum does that)."},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace
}  // namespace warpreduce

PYBIND11_MODULE(_C, m) {
  if (PyModule_AddFunctions(m.ptr(), warpreduce::methods) != 0) {
    throw pybind11::error_already_set();
  }
  m.def("plan", &warpreduce::describe_plan, pybind11::arg("input"),
        pybind11::arg("dim") = pybind11::none(), pybind11::arg("sms") = 132,
        pybind11::arg("as_cuda") = false,
        "How warpreduce.sum(input, dim) runs: its passes over the reduction geometry, and the "
        "GPU launch of each on a device of `sms` multiprocessors (as_cuda: the plan a CUDA "
        "tensor of input's layout gets).");
}
