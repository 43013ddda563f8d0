
#include <torch/csrc/inductor/aoti_include/cuda.h>
// Definition of AOTI runtime interface functions

#include <torch/csrc/inductor/aoti_runtime/interface.h>
#include <torch/csrc/inductor/aoti_runtime/model_container.h>

#include <exception>
#include <iostream>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

// Stores the last error message from a failed AOTI runtime call so that
// callers on the other side of the C ABI boundary can retrieve it via
// AOTInductorGetLastError(). Without this, exception messages (e.g.
// "CUDA error: an illegal memory access was encountered") are lost when
// the runtime boundary catches them and returns an error code.
static thread_local std::string g_aoti_last_error;

namespace {

// Error reporting must not let a secondary exception cross the C ABI.
AOTIRuntimeError record_aoti_runtime_exception(
    const std::exception& e) noexcept {
  try {
    g_aoti_last_error = e.what();
  } catch (...) { // NOLINT(bugprone-empty-catch)
  }
  try {
    std::cerr << "Error: " << e.what() << '\n';
  } catch (...) { // NOLINT(bugprone-empty-catch)
  }
  return AOTI_RUNTIME_FAILURE;
}

AOTIRuntimeError record_unknown_aoti_runtime_exception() noexcept {
  try {
    g_aoti_last_error = "Unknown exception";
  } catch (...) { // NOLINT(bugprone-empty-catch)
  }
  try {
    std::cerr << "Unknown exception occurred.\n";
  } catch (...) { // NOLINT(bugprone-empty-catch)
  }
  return AOTI_RUNTIME_FAILURE;
}

} // namespace

#define AOTI_RUNTIME_TRY(...)                       \
  try {                                             \
    g_aoti_last_error.clear();                      \
    __VA_ARGS__                                     \
  } catch (const std::exception& e) {               \
    return record_aoti_runtime_exception(e);        \
  } catch (...) {                                   \
    return record_unknown_aoti_runtime_exception(); \
  }

#define AOTI_VECTOR_SIZE_CHECK(actual_size, expected_size, name)  \
  do {                                                            \
    AOTI_RUNTIME_CHECK(                                           \
        actual_size == expected_size,                             \
        "expected " + std::string(name) + " vector size to be " + \
            std::to_string(expected_size) + ", but got " +        \
            std::to_string(actual_size));                         \
  } while (0)

// AOTInductor uses at::addmm_out, which doesn't support
// arguments that require gradient. For this reason, we
// enforce no_grad context for run APIs.
//
// A RAII, thread local (!) guard that enables or disables grad mode upon
// construction, and sets it back to the original value upon destruction.
struct AOTINoGradGuard {
  AOTINoGradGuard() {
    aoti_torch_grad_mode_set_enabled(false);
  }
  AOTINoGradGuard(const AOTINoGradGuard&) = delete;
  AOTINoGradGuard(AOTINoGradGuard&&) noexcept = delete;
  ~AOTINoGradGuard() {
    aoti_torch_grad_mode_set_enabled(prev_mode);
  }
  AOTINoGradGuard& operator=(const AOTINoGradGuard&) = delete;
  AOTINoGradGuard& operator=(AOTINoGradGuard&&) noexcept = delete;
  bool prev_mode{aoti_torch_grad_mode_is_enabled()};
};

namespace {

std::unordered_map<std::string, AtenTensorHandle> constant_map_from_pairs(
    const AOTInductorConstantMapEntry* pairs,
    size_t num_pairs) {
  std::unordered_map<std::string, AtenTensorHandle> input_map;
  input_map.reserve(num_pairs);
  for (size_t i = 0; i < num_pairs; ++i) {
    input_map.emplace(pairs[i].name, pairs[i].handle);
  }
  return input_map;
}

// Shared constructor for AOTInductorModelCreate / AOTInductorModelCreateV2.
// `populate(constant_map)` is called between model construction and
// optional embedded-blob loading.
template <typename Populate>
AOTIRuntimeError createModelImpl(
    AOTInductorModelHandle* model_handle,
    bool load_constants_from_blob,
    Populate&& populate) {
  auto constant_map = std::make_shared<torch::aot_inductor::ConstantMap>();
  auto constant_array = std::make_shared<
      std::vector<torch::aot_inductor::ConstantHandle>>();
  auto model = std::make_unique<torch::aot_inductor::AOTInductorModel>(
      constant_map,
      constant_array,
      // device_str is hardcoded, as AOTInductorModelCreate is only used
      // for CPU models.
      "cpu",
      "");
  std::forward<Populate>(populate)(*constant_map);
  if (load_constants_from_blob) {
    model->load_constants();
  }
  *model_handle = reinterpret_cast<AOTInductorModelHandle>(model.release());
  return AOTI_RUNTIME_SUCCESS;
}

} // namespace

extern "C" {

AOTIRuntimeError AOTInductorModelContainerCreate(
    AOTInductorModelContainerHandle* container_handle,
    size_t num_models,
    bool is_cpu,
    const char* cubin_dir) AOTI_RUNTIME_TRY({
      return AOTInductorModelContainerCreateWithDevice(
        container_handle,
        num_models,
        is_cpu ? "cpu" : "cuda",
        cubin_dir);
})

AOTIRuntimeError AOTInductorModelContainerCreateWithDevice(
    AOTInductorModelContainerHandle* container_handle,
    size_t num_models,
    const char* device_str,
    const char* cubin_dir) AOTI_RUNTIME_TRY({
  if (num_models == 0) {
    std::cerr << "Error: num_models must be positive, but got 0\n";
    return AOTI_RUNTIME_FAILURE;
  }
  std::optional<std::string> cubin_dir_opt;
  if (cubin_dir != nullptr) {
    cubin_dir_opt.emplace(cubin_dir);
  }
  auto* container = new torch::aot_inductor::AOTInductorModelContainer(
      num_models, std::string(device_str), cubin_dir_opt);
  *container_handle =
      reinterpret_cast<AOTInductorModelContainerHandle>(container);
  return AOTI_RUNTIME_SUCCESS;
})


AOTIRuntimeError AOTInductorModelContainerCreateWithExternalConstants(
    AOTInductorModelContainerHandle* container_handle,
    size_t num_models,
    const char* device_str,
    const char* cubin_dir,
    const AOTInductorConstantMapEntry* constant_entries,
    size_t num_constant_entries) AOTI_RUNTIME_TRY({
  if (num_models == 0) {
    std::cerr << "Error: num_models must be positive, but got 0\n";
    return AOTI_RUNTIME_FAILURE;
  }
  if (num_constant_entries != 0 && constant_entries == nullptr) {
    std::cerr << "Error: constant_entries is null but num_constant_entries is "
              << num_constant_entries << "\n";
    return AOTI_RUNTIME_FAILURE;
  }
  std::optional<std::string> cubin_dir_opt;
  if (cubin_dir != nullptr) {
    cubin_dir_opt.emplace(cubin_dir);
  }
  // Rebuild the std map on the DSO side of the boundary so no std container
  // crosses the ABI; the entries are C-compatible (name + AtenTensorHandle).
  std::unordered_map<std::string, AtenTensorHandle> constants;
  constants.reserve(num_constant_entries);
  for (size_t i = 0; i < num_constant_entries; ++i) {
    constants.emplace(constant_entries[i].name, constant_entries[i].handle);
  }
  auto* container = new torch::aot_inductor::AOTInductorModelContainer(
      num_models,
      std::string(device_str),
      constants,
      cubin_dir_opt);
  *container_handle =
      reinterpret_cast<AOTInductorModelContainerHandle>(container);
  return AOTI_RUNTIME_SUCCESS;
})

AOTIRuntimeError AOTInductorModelContainerSetUseStreamAffinity(
    AOTInductorModelContainerHandle container_handle,
    bool use_stream_affinity) AOTI_RUNTIME_TRY({
  auto* container =
      reinterpret_cast<torch::aot_inductor::AOTInductorModelContainer*>(
          container_handle);
  container->set_use_stream_affinity(use_stream_affinity);
  return AOTI_RUNTIME_SUCCESS;
})

AOTIRuntimeError AOTInductorModelContainerGetStreamAffinityModelIndexForTesting(
    AOTInductorModelContainerHandle container_handle,
    AOTInductorStreamHandle stream_handle,
    int64_t* model_index) AOTI_RUNTIME_TRY({
  if (model_index == nullptr) {
    return AOTI_RUNTIME_FAILURE;
  }
  auto* container =
      reinterpret_cast<torch::aot_inductor::AOTInductorModelContainer*>(
          container_handle);
  auto stream =
      reinterpret_cast<torch::aot_inductor::DeviceStreamType>(stream_handle);
  *model_index = container->get_stream_affinity_model_index(stream);
  return AOTI_RUNTIME_SUCCESS;
})

AOTIRuntimeError AOTInductorModelContainerDelete(
    AOTInductorModelContainerHandle container_handle) AOTI_RUNTIME_TRY({
  auto* container =
      reinterpret_cast<torch::aot_inductor::AOTInductorModelContainer*>(
          container_handle);
  delete container;
  return AOTI_RUNTIME_SUCCESS;
})

AOTIRuntimeError AOTInductorModelContainerRun(
    AOTInductorModelContainerHandle container_handle,
    AtenTensorHandle* input_handles, // array of input AtenTensorHandle; handles
                                     // are stolen; the array itself is borrowed
    size_t num_inputs,
    AtenTensorHandle*
        output_handles, // array for writing output AtenTensorHandle; handles
                        // will be stolen by the caller; the array itself is
                        // borrowed
    size_t num_outputs,
    AOTInductorStreamHandle stream_handle,
    AOTIProxyExecutorHandle proxy_executor_handle) AOTI_RUNTIME_TRY({
  auto* container =
      reinterpret_cast<torch::aot_inductor::AOTInductorModelContainer*>(
          container_handle);
  AOTI_VECTOR_SIZE_CHECK(num_inputs, container->num_inputs(), "inputs");
  AOTI_VECTOR_SIZE_CHECK(num_outputs, container->num_outputs(), "outputs");

  auto stream =
      reinterpret_cast<torch::aot_inductor::DeviceStreamType>(stream_handle);
  AOTINoGradGuard guard;
  container->run(
      input_handles, output_handles, stream, proxy_executor_handle);
  return AOTI_RUNTIME_SUCCESS;
})

AOTIRuntimeError AOTInductorModelContainerRunSingleThreaded(
    AOTInductorModelContainerHandle container_handle,
    AtenTensorHandle* input_handles, // array of input AtenTensorHandle; handles
                                     // are stolen; the array itself is borrowed
    size_t num_inputs,
    AtenTensorHandle*
        output_handles, // array for writing output AtenTensorHandle; handles
                        // will be stolen by the caller; the array itself is
                        // borrowed
    size_t num_outputs,
    AOTInductorStreamHandle stream_handle,
    AOTIProxyExecutorHandle proxy_executor_handle) AOTI_RUNTIME_TRY({
  auto* container =
      reinterpret_cast<torch::aot_inductor::AOTInductorModelContainer*>(
          container_handle);
  AOTI_VECTOR_SIZE_CHECK(num_inputs, container->num_inputs(), "inputs");
  AOTI_VECTOR_SIZE_CHECK(num_outputs, container->num_outputs(), "outputs");

  auto stream =
      reinterpret_cast<torch::aot_inductor::DeviceStreamType>(stream_handle);
  AOTINoGradGuard guard;
  container->run_single_threaded(
      input_handles, output_handles, stream, proxy_executor_handle);
  return AOTI_RUNTIME_SUCCESS;
})

AOTIRuntimeError AOTInductorModelContainerGetNumConstants(
    AOTInductorModelContainerHandle container_handle,
    size_t* num_constants) AOTI_RUNTIME_TRY({
  auto* container =
      reinterpret_cast<torch::aot_inductor::AOTInductorModelContainer*>(
          container_handle);
  *num_constants = container->num_constants();
  return AOTI_RUNTIME_SUCCESS;
})

AOTIRuntimeError AOTInductorModelContainerGetConstantName(
    AOTInductorModelContainerHandle container_handle,
    size_t idx,
    const char** name) AOTI_RUNTIME_TRY({
  auto* container =
      reinterpret_cast<torch::aot_inductor::AOTInductorModelContainer*>(
          container_handle);
  *name = container->constant_name(idx);
  return AOTI_RUNTIME_SUCCESS;
})

AOTIRuntimeError AOTInductorModelContainerGetConstantOriginalFQN(
    AOTInductorModelContainerHandle container_handle,
    size_t idx,
    const char** original_fqn) AOTI_RUNTIME_TRY({
  auto* container =
      reinterpret_cast<torch::aot_inductor::AOTInductorModelContainer*>(
          container_handle);
  *original_fqn = container->constant_original_fqn(idx);
  return AOTI_RUNTIME_SUCCESS;
})

AOTIRuntimeError AOTInductorModelContainerGetConstantFromFolded(
    AOTInductorModelContainerHandle container_handle,
    size_t idx,
    bool* from_folded) AOTI_RUNTIME_TRY({
  auto* container =
      reinterpret_cast<torch::aot_inductor::AOTInductorModelContainer*>(
          container_handle);
  *from_folded = container->constant_from_folded(idx);
  return AOTI_RUNTIME_SUCCESS;
})

AOTIRuntimeError AOTInductorModelContainerGetConstantType(
    AOTInductorModelContainerHandle container_handle,
    size_t idx,
    int32_t* type) AOTI_RUNTIME_TRY({
  auto* container =
      reinterpret_cast<torch::aot_inductor::AOTInductorModelContainer*>(
          container_handle);
  *type = container->constant_type(idx);
  return AOTI_RUNTIME_SUCCESS;
})

AOTIRuntimeError AOTInductorModelContainerGetConstantDtype(
    AOTInductorModelContainerHandle container_handle,
    size_t idx,
    int32_t* dtype) AOTI_RUNTIME_TRY({
  auto* container =
      reinterpret_cast<torch::aot_inductor::AOTInductorModelContainer*>(
          container_handle);
  *dtype = container->constant_dtype(idx);
  return AOTI_RUNTIME_SUCCESS;
})

AOTIRuntimeError AOTInductorModelContainerGetConstantDataSize(
    AOTInductorModelContainerHandle container_handle,
    size_t idx,
    size_t* data_size) AOTI_RUNTIME_TRY({
  auto* container =
      reinterpret_cast<torch::aot_inductor::AOTInductorModelContainer*>(
          container_handle);
  *data_size = container->constant_data_size(idx);
  return AOTI_RUNTIME_SUCCESS;
})

AOTIRuntimeError AOTInductorModelContainerExtractConstantsMap(
    AOTInductorModelContainerHandle container_handle,
    AOTInductorConstantMapHandle constant_map_handle,
    bool use_inactive) AOTI_RUNTIME_TRY({
  auto* container =
      reinterpret_cast<torch::aot_inductor::AOTInductorModelContainer*>(
          container_handle);
  auto constants_map =
      reinterpret_cast<std::unordered_map<std::string, AtenTensorHandle>*>(
          constant_map_handle);
  const auto ret = container->extract_constants_map(use_inactive);
  for (const auto& pair : ret) {
    constants_map->emplace(pair.first, pair.second);
  }
  return AOTI_RUNTIME_SUCCESS;
})

AOTIRuntimeError AOTInductorModelContainerExtractConstantsMapEntries(
    AOTInductorModelContainerHandle container_handle,
    const AOTInductorConstantMapEntry** entries,
    size_t* num_entries,
    bool use_inactive) AOTI_RUNTIME_TRY({
  if (!entries || !num_entries) {
    return AOTI_RUNTIME_FAILURE;
  }
  auto* container =
      reinterpret_cast<torch::aot_inductor::AOTInductorModelContainer*>(
          container_handle);
  const auto& extracted =
      container->extract_constants_map_entries(use_inactive);
  *entries = extracted.empty() ? nullptr : extracted.data();
  *num_entries = extracted.size();
  return AOTI_RUNTIME_SUCCESS;
})

AOTIRuntimeError AOTInductorModelContainerUpdateUserManagedConstantBuffer(
    AOTInductorModelContainerHandle container_handle,
    AOTInductorConstantMapHandle constant_map_handle,
    bool use_inactive,
    bool validate_full_update) AOTI_RUNTIME_TRY({
  auto* container =
      reinterpret_cast<torch::aot_inductor::AOTInductorModelContainer*>(
          container_handle);
  auto input_map =
      reinterpret_cast<std::unordered_map<std::string, AtenTensorHandle>*>(
          constant_map_handle);
  container->update_constant_buffer(
      *input_map,
      use_inactive,
      validate_full_update,
      /* user_managed = */ true);
  return AOTI_RUNTIME_SUCCESS;
})

AOTIRuntimeError AOTInductorModelContainerUpdateUserManagedConstantBufferPairs(
    AOTInductorModelContainerHandle container_handle,
    const AOTInductorConstantMapEntry* pairs,
    size_t num_pairs,
    bool use_inactive,
    bool validate_full_update) AOTI_RUNTIME_TRY({
  auto* container =
      reinterpret_cast<torch::aot_inductor::AOTInductorModelContainer*>(
          container_handle);
  // Build a local unordered_map inside
  std::unordered_map<std::string, AtenTensorHandle> input_map;
  input_map.reserve(num_pairs);
  for (size_t i = 0; i < num_pairs; ++i) {
    input_map.emplace(pairs[i].name, pairs[i].handle);
  }
  container->update_constant_buffer(
      input_map, use_inactive, validate_full_update, /*user_managed=*/true);
  return AOTI_RUNTIME_SUCCESS;
})

AOTIRuntimeError AOTInductorModelContainerUpdateConstantBuffer(
    AOTInductorModelContainerHandle container_handle,
    AOTInductorConstantMapHandle constant_map_handle,
    bool use_inactive,
    bool validate_full_update) AOTI_RUNTIME_TRY({
  auto* container =
      reinterpret_cast<torch::aot_inductor::AOTInductorModelContainer*>(
          container_handle);
  auto input_map =
      reinterpret_cast<std::unordered_map<std::string, AtenTensorHandle>*>(
          constant_map_handle);
  container->update_constant_buffer(
      *input_map, use_inactive, validate_full_update);
  return AOTI_RUNTIME_SUCCESS;
})

AOTIRuntimeError AOTInductorModelContainerUpdateConstantBufferPairs(
    AOTInductorModelContainerHandle container_handle,
    const AOTInductorConstantMapEntry* pairs,
    size_t num_pairs,
    bool use_inactive,
    bool validate_full_update) AOTI_RUNTIME_TRY({
  auto* container =
      reinterpret_cast<torch::aot_inductor::AOTInductorModelContainer*>(
          container_handle);
  auto input_map = constant_map_from_pairs(pairs, num_pairs);
  container->update_constant_buffer(
      input_map, use_inactive, validate_full_update);
  return AOTI_RUNTIME_SUCCESS;
})

AOTIRuntimeError AOTInductorModelContainerUpdateConstantBufferFromCpu(
    AOTInductorModelContainerHandle container_handle,
    AOTInductorConstantMapHandle constant_map_handle,
    bool use_inactive,
    bool validate_full_update) AOTI_RUNTIME_TRY({
  auto* container =
      reinterpret_cast<torch::aot_inductor::AOTInductorModelContainer*>(
          container_handle);
  auto input_map =
      reinterpret_cast<std::unordered_map<std::string, AtenTensorHandle>*>(
          constant_map_handle);
  container->update_constant_buffer(
      *input_map,
      use_inactive,
      validate_full_update,
      /*user_managed=*/false,
      /*allow_h2d_copy=*/true);
  return AOTI_RUNTIME_SUCCESS;
})

AOTIRuntimeError AOTInductorModelContainerUpdateConstantBufferFromCpuPairs(
    AOTInductorModelContainerHandle container_handle,
    const AOTInductorConstantMapEntry* pairs,
    size_t num_pairs,
    bool use_inactive,
    bool validate_full_update) AOTI_RUNTIME_TRY({
  auto* container =
      reinterpret_cast<torch::aot_inductor::AOTInductorModelContainer*>(
          container_handle);
  auto input_map = constant_map_from_pairs(pairs, num_pairs);
  container->update_constant_buffer(
      input_map,
      use_inactive,
      validate_full_update,
      /*user_managed=*/false,
      /*allow_h2d_copy=*/true);
  return AOTI_RUNTIME_SUCCESS;
})

AOTIRuntimeError AOTInductorModelContainerUpdateInactiveConstantBuffer(
    AOTInductorModelContainerHandle container_handle,
    AOTInductorConstantMapHandle constant_map_handle) AOTI_RUNTIME_TRY({
  return AOTInductorModelContainerUpdateConstantBuffer(
      container_handle,
      constant_map_handle,
      /*use_inactive=*/true,
      /*validate_full_update=*/true);
})

AOTIRuntimeError AOTInductorModelContainerUpdateInactiveConstantBufferPairs(
    AOTInductorModelContainerHandle container_handle,
    const AOTInductorConstantMapEntry* pairs,
    size_t num_pairs) AOTI_RUNTIME_TRY({
  return AOTInductorModelContainerUpdateConstantBufferPairs(
      container_handle,
      pairs,
      num_pairs,
      /*use_inactive=*/true,
      /*validate_full_update=*/true);
})

AOTIRuntimeError AOTInductorModelContainerFreeInactiveConstantBuffer(
    AOTInductorModelContainerHandle container_handle) AOTI_RUNTIME_TRY({
  auto* container =
      reinterpret_cast<torch::aot_inductor::AOTInductorModelContainer*>(
          container_handle);
  container->free_inactive_constant_buffer();
  return AOTI_RUNTIME_SUCCESS;
})

AOTIRuntimeError AOTInductorModelContainerRunConstantFolding(
    AOTInductorModelContainerHandle container_handle,
    bool use_inactive,
    AOTInductorStreamHandle stream_handle,
    AOTIProxyExecutorHandle proxy_executor_handle) AOTI_RUNTIME_TRY({
  auto* container =
      reinterpret_cast<torch::aot_inductor::AOTInductorModelContainer*>(
          container_handle);
  auto stream =
      reinterpret_cast<torch::aot_inductor::DeviceStreamType>(stream_handle);
  AOTINoGradGuard guard;
  container->run_const_fold(use_inactive, stream, proxy_executor_handle);
  return AOTI_RUNTIME_SUCCESS;
})

AOTIRuntimeError AOTInductorModelContainerSwapConstantBuffer(
    AOTInductorModelContainerHandle container_handle) AOTI_RUNTIME_TRY({
  auto* container =
      reinterpret_cast<torch::aot_inductor::AOTInductorModelContainer*>(
          container_handle);
  container->swap_constant_buffer();
  return AOTI_RUNTIME_SUCCESS;
})

AOTIRuntimeError AOTInductorModelContainerGetNumInputs(
    AOTInductorModelContainerHandle container_handle,
    size_t* ret_num_inputs) AOTI_RUNTIME_TRY({
  auto* container =
      reinterpret_cast<torch::aot_inductor::AOTInductorModelContainer*>(
          container_handle);
  *ret_num_inputs = container->num_inputs();
  return AOTI_RUNTIME_SUCCESS;
})

AOTIRuntimeError AOTInductorModelContainerGetInputName(
    AOTInductorModelContainerHandle container_handle,
    size_t input_idx,
    const char** ret_input_names) AOTI_RUNTIME_TRY({
  auto* container =
      reinterpret_cast<torch::aot_inductor::AOTInductorModelContainer*>(
          container_handle);
  *ret_input_names = container->input_name(input_idx);
  return AOTI_RUNTIME_SUCCESS;
})

AOTIRuntimeError AOTInductorModelContainerGetNumOutputs(
    AOTInductorModelContainerHandle container_handle,
    size_t* ret_num_outputs) AOTI_RUNTIME_TRY({
  auto* container =
      reinterpret_cast<torch::aot_inductor::AOTInductorModelContainer*>(
          container_handle);
  *ret_num_outputs = container->num_outputs();
  return AOTI_RUNTIME_SUCCESS;
})

AOTIRuntimeError AOTInductorModelContainerGetOutputName(
    AOTInductorModelContainerHandle container_handle,
    size_t output_idx,
    const char** ret_output_names) AOTI_RUNTIME_TRY({
  auto* container =
      reinterpret_cast<torch::aot_inductor::AOTInductorModelContainer*>(
          container_handle);
  *ret_output_names = container->output_name(output_idx);
  return AOTI_RUNTIME_SUCCESS;
})

AOTIRuntimeError AOTInductorModelContainerGetCallSpec(
    AOTInductorModelContainerHandle container_handle,
    const char** in_spec,
    const char** out_spec) AOTI_RUNTIME_TRY({
  auto* container =
      reinterpret_cast<torch::aot_inductor::AOTInductorModelContainer*>(
          container_handle);
  *in_spec = container->get_in_spec();
  *out_spec = container->get_out_spec();
  return AOTI_RUNTIME_SUCCESS;
})

AOTIRuntimeError AOTInductorModelCreate(
    AOTInductorModelHandle* model_handle,
    AOTInductorConstantMapHandle constant_map_handle) AOTI_RUNTIME_TRY({
  return createModelImpl(
      model_handle, constant_map_handle == nullptr, [=](auto& constant_map) {
        auto* input_map = reinterpret_cast<
            std::unordered_map<std::string, AtenTensorHandle>*>(
            constant_map_handle);
        if (input_map) {
          for (const auto& kv : *input_map) {
            constant_map.emplace(kv.first, kv.second);
          }
        }
      });
})

AOTIRuntimeError AOTInductorModelCreateV2(
    AOTInductorModelHandle* model_handle,
    const AOTInductorConstantMapEntry* pairs,
    size_t num_pairs) AOTI_RUNTIME_TRY({
  return createModelImpl(
      model_handle, pairs == nullptr || num_pairs == 0, [=](auto& constant_map) {
        if (pairs && num_pairs > 0) {
          constant_map.reserve(num_pairs);
          for (size_t i = 0; i < num_pairs; ++i) {
            constant_map.emplace(pairs[i].name, pairs[i].handle);
          }
        }
      });
})

AOTIRuntimeError AOTInductorModelRun(
    AOTInductorModelHandle model_handle,
    AtenTensorHandle* input_handles,
    AtenTensorHandle* output_handles) AOTI_RUNTIME_TRY({
  auto model =
      reinterpret_cast<torch::aot_inductor::AOTInductorModel*>(model_handle);
  AOTINoGradGuard guard;
  model->run_impl(
      input_handles,
      output_handles,
      (torch::aot_inductor::DeviceStreamType) nullptr,
      nullptr);
  return AOTI_RUNTIME_SUCCESS;
})

AOTIRuntimeError AOTInductorModelDelete(
    AOTInductorModelHandle model_handle) AOTI_RUNTIME_TRY({
  auto model = reinterpret_cast<torch::aot_inductor::AOTInductorModel*>(
      model_handle);
  delete model;
  return AOTI_RUNTIME_SUCCESS;
})

AOTIRuntimeError AOTInductorModelGetNumOutputs(
    AOTInductorModelHandle model_handle,
    size_t* ret_num_outputs) AOTI_RUNTIME_TRY({
  auto model =
      reinterpret_cast<torch::aot_inductor::AOTInductorModel*>(model_handle);
  *ret_num_outputs = model->num_outputs();
  return AOTI_RUNTIME_SUCCESS;
})

AOTIRuntimeError AOTInductorModelUpdateConstantsMap(
    AOTInductorModelHandle model_handle,
    AOTInductorConstantMapHandle constant_map_handle) AOTI_RUNTIME_TRY({
  auto model =
      reinterpret_cast<torch::aot_inductor::AOTInductorModel*>(model_handle);
  auto constant_map = std::make_shared<torch::aot_inductor::ConstantMap>();
  auto input_map =
      reinterpret_cast<std::unordered_map<std::string, AtenTensorHandle>*>(
          constant_map_handle);

  for (auto const& kv : *input_map) {
    constant_map->emplace(kv.first, kv.second);
  }
  model->update_constants_map(std::move(constant_map));
  return AOTI_RUNTIME_SUCCESS;
})

// C-ABI-safe variant: uses an array of (name, handle) pairs instead of an
// opaque pointer to std::unordered_map, so the host and DSO can use
// different C++ standard libraries without ABI conflicts.
AOTIRuntimeError AOTInductorModelUpdateConstantsMapV2(
    AOTInductorModelHandle model_handle,
    const AOTInductorConstantMapEntry* pairs,
    int32_t num_pairs) AOTI_RUNTIME_TRY({
  auto model =
      reinterpret_cast<torch::aot_inductor::AOTInductorModel*>(model_handle);
  auto constant_map = std::make_shared<torch::aot_inductor::ConstantMap>();
  constant_map->reserve(num_pairs);
  for (int32_t i = 0; i < num_pairs; ++i) {
    constant_map->emplace(pairs[i].name, pairs[i].handle);
  }
  model->update_constants_map(std::move(constant_map));
  return AOTI_RUNTIME_SUCCESS;
})

AOTIRuntimeError AOTInductorModelContainerGetConstantsBlobSize(
    AOTInductorModelContainerHandle container_handle,
    uint64_t* ret_size) AOTI_RUNTIME_TRY({
  auto* container =
      reinterpret_cast<torch::aot_inductor::AOTInductorModelContainer*>(
          container_handle);
  *ret_size = container->constant_blob_size();
  return AOTI_RUNTIME_SUCCESS;
})

AOTIRuntimeError AOTInductorModelContainerDidCallLoadConstants(
    AOTInductorModelContainerHandle container_handle,
    bool* did_call_load_constants) AOTI_RUNTIME_TRY({
  auto* container =
      reinterpret_cast<torch::aot_inductor::AOTInductorModelContainer*>(
          container_handle);
  *did_call_load_constants = container->did_call_load_constants();
  return AOTI_RUNTIME_SUCCESS;
})


// Load weights from a single blob in weight_blob_ptr
AOTIRuntimeError AOTInductorModelUpdateConstantsFromBlob(
    AOTInductorModelContainerHandle container_handle,
    const uint8_t* weight_blob_ptr) AOTI_RUNTIME_TRY({
  auto* container =
      reinterpret_cast<torch::aot_inductor::AOTInductorModelContainer*>(
          container_handle);
  container->update_constants_from_blob(weight_blob_ptr);
  return AOTI_RUNTIME_SUCCESS;
})

AOTIRuntimeError AOTInductorSetUsePinnedAsyncConstantsCopy(
    bool enabled) AOTI_RUNTIME_TRY({
  torch::aot_inductor::setUsePinnedAsyncConstantsCopy(enabled);
  return AOTI_RUNTIME_SUCCESS;
})

AOTIRuntimeError AOTInductorSetPinnedAsyncConstantsCopyStageBufferBytes(
    size_t bytes) AOTI_RUNTIME_TRY({
  torch::aot_inductor::setPinnedAsyncConstantsCopyStageBufferBytes(bytes);
  return AOTI_RUNTIME_SUCCESS;
})

AOTIRuntimeError AOTInductorSetPinnedAsyncConstantsCopyCpuThreads(
    size_t threads) AOTI_RUNTIME_TRY({
  torch::aot_inductor::setPinnedAsyncConstantsCopyCpuThreads(threads);
  return AOTI_RUNTIME_SUCCESS;
})

AOTIRuntimeError AOTInductorGetLastError(
    const char** error_msg) {
  *error_msg = g_aoti_last_error.c_str();
  return AOTI_RUNTIME_SUCCESS;
}

} // extern "C"


#define CUDA_DRIVER_CHECK(EXPR)                    \
do {                                               \
    CUresult code = EXPR;                          \
    const char *msg;                               \
    CUresult code_get_error = cuGetErrorString(code, &msg); \
    if (code_get_error != CUDA_SUCCESS) {          \
        throw std::runtime_error(                  \
            std::string("CUDA driver error: ") +   \
            std::string("invalid error code!"));   \
    }                                              \
    if (code != CUDA_SUCCESS) {                    \
        throw std::runtime_error(                  \
            std::string("CUDA driver error: ") +   \
            std::string(msg));                     \
    }                                              \
} while (0);

static inline CUfunction loadKernel(
        std::string filePath,
        const std::string &funcName,
        uint32_t sharedMemBytes,
        const std::optional<std::string> &cubinDir = std::nullopt,
        std::vector<CUmodule>* loaded_modules = nullptr) {
    if (cubinDir) {
        std::filesystem::path p1{*cubinDir};
        std::filesystem::path p2{filePath};
        filePath = (p1 / p2.filename()).string();
    }

    CUmodule mod;
    CUfunction func;
    CUDA_DRIVER_CHECK(cuModuleLoad(&mod, filePath.c_str()));
    if (loaded_modules) {
        loaded_modules->push_back(mod);
    }
    CUDA_DRIVER_CHECK(cuModuleGetFunction(&func, mod, funcName.c_str()));
    if (sharedMemBytes > 0) {
        CUDA_DRIVER_CHECK(cuFuncSetAttribute(
            func,
            CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            sharedMemBytes
        ))
    }
    return func;
}

static inline CUfunction loadKernel(
        const void* start,
        const std::string &funcName,
        uint32_t sharedMemBytes,
        std::vector<CUmodule>* loaded_modules = nullptr) {
    CUmodule mod;
    CUfunction func;
    CUDA_DRIVER_CHECK(cuModuleLoadData(&mod, start));
    if (loaded_modules) {
        loaded_modules->push_back(mod);
    }
    CUDA_DRIVER_CHECK(cuModuleGetFunction(&func, mod, funcName.c_str()));
    if (sharedMemBytes > 0) {
        CUDA_DRIVER_CHECK(cuFuncSetAttribute(
            func,
            CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            sharedMemBytes
        ))
    }
    return func;
}

static inline void launchKernel(
        CUfunction func,
        uint32_t gridX,
        uint32_t gridY,
        uint32_t gridZ,
        uint32_t numWarps,
        uint32_t sharedMemBytes,
        void* args[],
        cudaStream_t stream,
        bool launchPdl) {
    if (!launchPdl) {
        CUDA_DRIVER_CHECK(cuLaunchKernel(
            func, gridX, gridY, gridZ, 32*numWarps, 1, 1, sharedMemBytes, stream, args, nullptr
        ));
        return;
    }

    CUlaunchAttribute launchAttr{};
    launchAttr.id =
        CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    launchAttr.value.programmaticStreamSerializationAllowed = 1;

    CUlaunchConfig launchConfig{};
    launchConfig.gridDimX = gridX;
    launchConfig.gridDimY = gridY;
    launchConfig.gridDimZ = gridZ;
    launchConfig.blockDimX = 32 * numWarps;
    launchConfig.blockDimY = 1;
    launchConfig.blockDimZ = 1;
    launchConfig.sharedMemBytes = sharedMemBytes;
    launchConfig.hStream = stream;
    launchConfig.attrs = &launchAttr;
    launchConfig.numAttrs = 1;
    CUDA_DRIVER_CHECK(
        cuLaunchKernelEx(&launchConfig, func, args, nullptr));
}
CACHE_TORCH_DTYPE(float32);
CACHE_TORCH_DEVICE(cuda);
CACHE_TORCH_DEVICE(cpu);
CACHE_TORCH_LAYOUT(strided);
namespace torch::aot_inductor {
namespace {
class AOTInductorModelKernels : public AOTInductorModelKernelsBase {
  public:
    CUfunction triton_poi_fused_2{nullptr};
    CUfunction triton_poi_fused__softmax_prepare_softmax_online_3{nullptr};
    CUfunction triton_poi_fused_addmm_gelu_0{nullptr};
    CUfunction triton_poi_fused_addmm_log_tanh_1{nullptr};
};
}  // namespace



AOTInductorModel::AOTInductorModel(std::shared_ptr<ConstantMap> constants_map,
                                   std::shared_ptr<std::vector<ConstantHandle>> constants_array,
                                   const std::string& device_str,
                                   std::optional<std::string> cubin_dir)
    : AOTInductorModelBase(1,
                           1,
                           5,
                           device_str,
                           std::move(cubin_dir),
                           true) {
    inputs_info_[0].name = "arg6_1";
    constants_info_[0].name = "fc_0_weight";
    constants_info_[0].dtype = cached_torch_dtype_float32;
    constants_info_[0].device_type = cached_torch_device_type_cpu;
    constants_info_[0].offset = 0;
    constants_info_[0].data_size = 2048;
    constants_info_[0].from_folded = false;
    constants_info_[0].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::Parameter);
    constants_info_[0].shape = {32, 16};
    constants_info_[0].stride = {16, 1};
    constants_info_[0].layout = static_cast<int32_t>(cached_torch_layout_strided);
    constants_info_[0].original_fqn = "fc.0.weight";
    constants_info_[1].name = "fc_0_bias";
    constants_info_[1].dtype = cached_torch_dtype_float32;
    constants_info_[1].device_type = cached_torch_device_type_cpu;
    constants_info_[1].offset = 0;
    constants_info_[1].data_size = 128;
    constants_info_[1].from_folded = false;
    constants_info_[1].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::Parameter);
    constants_info_[1].shape = {32};
    constants_info_[1].stride = {1};
    constants_info_[1].layout = static_cast<int32_t>(cached_torch_layout_strided);
    constants_info_[1].original_fqn = "fc.0.bias";
    constants_info_[2].name = "fc_1_weight";
    constants_info_[2].dtype = cached_torch_dtype_float32;
    constants_info_[2].device_type = cached_torch_device_type_cpu;
    constants_info_[2].offset = 0;
    constants_info_[2].data_size = 4096;
    constants_info_[2].from_folded = false;
    constants_info_[2].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::Parameter);
    constants_info_[2].shape = {32, 32};
    constants_info_[2].stride = {32, 1};
    constants_info_[2].layout = static_cast<int32_t>(cached_torch_layout_strided);
    constants_info_[2].original_fqn = "fc.1.weight";
    constants_info_[3].name = "fc_1_bias";
    constants_info_[3].dtype = cached_torch_dtype_float32;
    constants_info_[3].device_type = cached_torch_device_type_cpu;
    constants_info_[3].offset = 0;
    constants_info_[3].data_size = 128;
    constants_info_[3].from_folded = false;
    constants_info_[3].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::Parameter);
    constants_info_[3].shape = {32};
    constants_info_[3].stride = {1};
    constants_info_[3].layout = static_cast<int32_t>(cached_torch_layout_strided);
    constants_info_[3].original_fqn = "fc.1.bias";
    constants_info_[4].name = "fc_2_weight";
    constants_info_[4].dtype = cached_torch_dtype_float32;
    constants_info_[4].device_type = cached_torch_device_type_cpu;
    constants_info_[4].offset = 0;
    constants_info_[4].data_size = 512;
    constants_info_[4].from_folded = false;
    constants_info_[4].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::Parameter);
    constants_info_[4].shape = {4, 32};
    constants_info_[4].stride = {32, 1};
    constants_info_[4].layout = static_cast<int32_t>(cached_torch_layout_strided);
    constants_info_[4].original_fqn = "fc.2.weight";
    update_constants_map(std::move(constants_map));
    update_constants_array(std::move(constants_array));
    in_spec_ = R"([1, {"type": "builtins.tuple", "context": "null", "children_spec": [{"type": "builtins.tuple", "context": "null", "children_spec": [{"type": null, "context": null, "children_spec": []}]}, {"type": "builtins.dict", "context": "[]", "children_spec": []}]}])";
    out_spec_ = R"([1, {"type": "builtins.tuple", "context": "null", "children_spec": [{"type": null, "context": null, "children_spec": []}]}])";
    outputs_info_[0].name = "output0";
    this->kernels_ = std::make_unique<AOTInductorModelKernels>();
}

std::unordered_map<std::string, AtenTensorHandle> AOTInductorModel::const_run_impl(
    DeviceStreamType stream,
    AOTIProxyExecutorHandle proxy_executor,
    bool initialization
) {

    if (!initialization) {
        std::cerr << "[WARNING] Calling constant_folding in model, but compiled with config: "
                  << "aot_inductor.use_runtime_constant_folding=False\n";
    }
    return {};
}
} // namespace torch::aot_inductor
using namespace torch::aot_inductor;

template <typename in_out_ptr0_type_, typename in_ptr0_type_, typename kernels_type_>
static __attribute__((noinline)) void call_triton_poi_fused_addmm_gelu_0(
    const in_out_ptr0_type_& in_out_ptr0,
    const in_ptr0_type_& in_ptr0,
    int64_t xnumel,
    int32_t device_idx_,
    cudaStream_t stream_,
    kernels_type_& kernels_,
    const std::optional<std::string>& cubin_dir_ = std::nullopt
){
    /*
    async_compile.triton('triton_poi_fused_addmm_gelu_0', '''
    import triton
    import triton.language as tl

    from torch._inductor.runtime import triton_helpers, triton_heuristics
    from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
    from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
    triton_helpers.set_driver_to_gpu()

    @triton_heuristics.pointwise(
        size_hints={'x': 256}, 
        filename=__file__,
        triton_meta={'signature': {'in_out_ptr0': '*fp32', 'in_ptr0': '*fp32', 'xnumel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]]}]},
        inductor_meta={'grid_type': 'Grid1D', 'kernel_name': 'triton_poi_fused_addmm_gelu_0', 'mutated_arg_names': ['in_out_ptr0'], 'optimize_mem': True, 'no_x_dim': False, 'atomic_add_found': False, 'num_load': 2, 'num_store': 1, 'num_reduction': 0, 'autotune_hints': (), 'tiling_scores': {'x': 3200}, 'backend_hash': 'A8D4B7AD1D7B76382BCCD53B62B20933A68DF17A6D0B3F8D0003D25864098BD5', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': False, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'incremental_autotune': False, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': True, 'deterministic': False, 'batch_invariant': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': True, 'dynamic_disable_pipelining': True, 'are_deterministic_algorithms_enabled': False},
        min_elem_per_thread=0
    )
    @triton.jit
    def triton_poi_fused_addmm_gelu_0(in_out_ptr0, in_ptr0, xnumel, XBLOCK : tl.constexpr):
        xnumel = 256
        xoffset = tl.program_id(0) * XBLOCK
        xindex = xoffset + tl.arange(0, XBLOCK)[:]
        xmask = xindex < xnumel
        x0 = (xindex % 32)
        x2 = xindex
        tmp0 = tl.load(in_ptr0 + (x0), xmask, eviction_policy='evict_last')
        tmp1 = tl.load(in_out_ptr0 + (x2), xmask)
        tmp2 = tmp0 + tmp1
        tmp3 = tl.full([1], 0.5, tl.float32)
        tmp4 = tmp2 * tmp3
        tmp5 = tl.full([1], 0.7071067811865476, tl.float32)
        tmp6 = tmp2 * tmp5
        tmp7 = libdevice.erf(tmp6)
        tmp8 = tl.full([1], 1.0, tl.float32)
        tmp9 = tmp7 + tmp8
        tmp10 = tmp4 * tmp9
        tl.store(in_out_ptr0 + (x2), tmp10, xmask)
    ''', device_str='cuda')
    */
    uint32_t grid_0 = ((xnumel + (256 - 1)) / (256));
    uint32_t grid_1 = 1;
    uint32_t grid_2 = 1;
    if (grid_0 == 0 || grid_1 == 0 || grid_2 == 0) return;
    if (kernels_.triton_poi_fused_addmm_gelu_0 == nullptr) {
        kernels_.triton_poi_fused_addmm_gelu_0 = loadKernel("/tmp/torchinductor_cg_cg215/c4omuesfbixeerwt7ial3werxbaym7owdhnqymbpcfkphrrr3n4k/cjgqvhsfwbr6xl7usbfaxwiiyl24fq32msyylayv4nuxzujvekn3.cubin", "triton_poi_fused_addmm_gelu_0", 0, cubin_dir_, &kernels_.loaded_modules_); 
    }
    CUdeviceptr var_0 = reinterpret_cast<CUdeviceptr>(in_out_ptr0.data_ptr());
    CUdeviceptr var_1 = reinterpret_cast<CUdeviceptr>(in_ptr0.data_ptr());
    int32_t var_2 = xnumel;
    CUdeviceptr global_scratch_scratch_3 = 0;
    CUdeviceptr profile_scratch_scratch_4 = 0;
    void* kernel_args_[] = {&var_0, &var_1, &var_2, &global_scratch_scratch_3, &profile_scratch_scratch_4};
    launchKernel(kernels_.triton_poi_fused_addmm_gelu_0, grid_0, grid_1, grid_2, 4, 0, kernel_args_, stream_, false);
}

template <typename in_out_ptr0_type_, typename in_ptr0_type_, typename kernels_type_>
static __attribute__((noinline)) void call_triton_poi_fused_addmm_log_tanh_1(
    const in_out_ptr0_type_& in_out_ptr0,
    const in_ptr0_type_& in_ptr0,
    int64_t xnumel,
    int32_t device_idx_,
    cudaStream_t stream_,
    kernels_type_& kernels_,
    const std::optional<std::string>& cubin_dir_ = std::nullopt
){
    /*
    async_compile.triton('triton_poi_fused_addmm_log_tanh_1', '''
    import triton
    import triton.language as tl

    from torch._inductor.runtime import triton_helpers, triton_heuristics
    from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
    from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
    triton_helpers.set_driver_to_gpu()

    @triton_heuristics.pointwise(
        size_hints={'x': 256}, 
        filename=__file__,
        triton_meta={'signature': {'in_out_ptr0': '*fp32', 'in_ptr0': '*fp32', 'xnumel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]]}]},
        inductor_meta={'grid_type': 'Grid1D', 'kernel_name': 'triton_poi_fused_addmm_log_tanh_1', 'mutated_arg_names': ['in_out_ptr0'], 'optimize_mem': True, 'no_x_dim': False, 'atomic_add_found': False, 'num_load': 2, 'num_store': 1, 'num_reduction': 0, 'autotune_hints': (), 'tiling_scores': {'x': 3200}, 'backend_hash': 'A8D4B7AD1D7B76382BCCD53B62B20933A68DF17A6D0B3F8D0003D25864098BD5', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': False, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'incremental_autotune': False, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': True, 'deterministic': False, 'batch_invariant': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': True, 'dynamic_disable_pipelining': True, 'are_deterministic_algorithms_enabled': False},
        min_elem_per_thread=0
    )
    @triton.jit
    def triton_poi_fused_addmm_log_tanh_1(in_out_ptr0, in_ptr0, xnumel, XBLOCK : tl.constexpr):
        xnumel = 256
        xoffset = tl.program_id(0) * XBLOCK
        xindex = xoffset + tl.arange(0, XBLOCK)[:]
        xmask = xindex < xnumel
        x0 = (xindex % 32)
        x2 = xindex
        tmp0 = tl.load(in_ptr0 + (x0), xmask, eviction_policy='evict_last')
        tmp1 = tl.load(in_out_ptr0 + (x2), xmask)
        tmp2 = tmp0 + tmp1
        tmp3 = tl_math.log(tmp2)
        tmp4 = libdevice.tanh(tmp3)
        tl.store(in_out_ptr0 + (x2), tmp4, xmask)
    ''', device_str='cuda')
    */
    uint32_t grid_0 = ((xnumel + (256 - 1)) / (256));
    uint32_t grid_1 = 1;
    uint32_t grid_2 = 1;
    if (grid_0 == 0 || grid_1 == 0 || grid_2 == 0) return;
    if (kernels_.triton_poi_fused_addmm_log_tanh_1 == nullptr) {
        kernels_.triton_poi_fused_addmm_log_tanh_1 = loadKernel("/tmp/torchinductor_cg_cg215/c4omuesfbixeerwt7ial3werxbaym7owdhnqymbpcfkphrrr3n4k/cnflcrcaypgvvpvb4qlac6o5uafju6luuaamdayz7smgoivyvzdp.cubin", "triton_poi_fused_addmm_log_tanh_1", 0, cubin_dir_, &kernels_.loaded_modules_); 
    }
    CUdeviceptr var_5 = reinterpret_cast<CUdeviceptr>(in_out_ptr0.data_ptr());
    CUdeviceptr var_6 = reinterpret_cast<CUdeviceptr>(in_ptr0.data_ptr());
    int32_t var_7 = xnumel;
    CUdeviceptr global_scratch_scratch_8 = 0;
    CUdeviceptr profile_scratch_scratch_9 = 0;
    void* kernel_args_[] = {&var_5, &var_6, &var_7, &global_scratch_scratch_8, &profile_scratch_scratch_9};
    launchKernel(kernels_.triton_poi_fused_addmm_log_tanh_1, grid_0, grid_1, grid_2, 4, 0, kernel_args_, stream_, false);
}

template <typename out_ptr0_type_, typename kernels_type_>
static __attribute__((noinline)) void call_triton_poi_fused_2(
    const out_ptr0_type_& out_ptr0,
    int64_t xnumel,
    int32_t device_idx_,
    cudaStream_t stream_,
    kernels_type_& kernels_,
    const std::optional<std::string>& cubin_dir_ = std::nullopt
){
    /*
    async_compile.triton('triton_poi_fused_2', '''
    import triton
    import triton.language as tl

    from torch._inductor.runtime import triton_helpers, triton_heuristics
    from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
    from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
    triton_helpers.set_driver_to_gpu()

    @triton_heuristics.pointwise(
        size_hints={'x': 4}, 
        filename=__file__,
        triton_meta={'signature': {'out_ptr0': '*fp32', 'xnumel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]]}]},
        inductor_meta={'grid_type': 'Grid1D', 'kernel_name': 'triton_poi_fused_2', 'mutated_arg_names': [], 'optimize_mem': True, 'no_x_dim': False, 'atomic_add_found': False, 'num_load': 0, 'num_store': 1, 'num_reduction': 0, 'autotune_hints': (), 'tiling_scores': {'x': 16}, 'backend_hash': 'A8D4B7AD1D7B76382BCCD53B62B20933A68DF17A6D0B3F8D0003D25864098BD5', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': False, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'incremental_autotune': False, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': True, 'deterministic': False, 'batch_invariant': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': True, 'dynamic_disable_pipelining': True, 'are_deterministic_algorithms_enabled': False},
        min_elem_per_thread=0
    )
    @triton.jit
    def triton_poi_fused_2(out_ptr0, xnumel, XBLOCK : tl.constexpr):
        xnumel = 4
        xoffset = tl.program_id(0) * XBLOCK
        xindex = xoffset + tl.arange(0, XBLOCK)[:]
        xmask = xindex < xnumel
        x0 = xindex
        tmp0 = (x0).to(tl.int64)
        tmp1 = (tmp0).to(tl.int64)
        tmp2 = tl.full([1], 2, tl.int64)
        tmp3 = tmp1 < tmp2
        tmp4 = tl.full([1], 1, tl.int64)
        tmp5 = tmp1 < tmp4
        tmp6 = tl.full([1], 0.054621726274490356, tl.float32)
        tmp7 = tl.full([1], -0.14207617938518524, tl.float32)
        tmp8 = tl.where(tmp5, tmp6, tmp7)
        tmp9 = tl.full([1], 3, tl.int64)
        tmp10 = tmp1 < tmp9
        tmp11 = tl.full([1], 0.027756670489907265, tl.float32)
        tmp12 = tl.full([1], 0.14563065767288208, tl.float32)
        tmp13 = tl.where(tmp10, tmp11, tmp12)
        tmp14 = tl.where(tmp3, tmp8, tmp13)
        tl.store(out_ptr0 + (x0), tmp14, xmask)
    ''', device_str='cuda')
    */
    uint32_t grid_0 = ((xnumel + (4 - 1)) / (4));
    uint32_t grid_1 = 1;
    uint32_t grid_2 = 1;
    if (grid_0 == 0 || grid_1 == 0 || grid_2 == 0) return;
    if (kernels_.triton_poi_fused_2 == nullptr) {
        kernels_.triton_poi_fused_2 = loadKernel("/tmp/torchinductor_cg_cg215/c4omuesfbixeerwt7ial3werxbaym7owdhnqymbpcfkphrrr3n4k/cd5z67phv57fmof5llqlikwfmj6zbgjbti56nlxlskvcsal4b3is.cubin", "triton_poi_fused_2", 0, cubin_dir_, &kernels_.loaded_modules_); 
    }
    CUdeviceptr var_10 = reinterpret_cast<CUdeviceptr>(out_ptr0.data_ptr());
    int32_t var_11 = xnumel;
    CUdeviceptr global_scratch_scratch_12 = 0;
    CUdeviceptr profile_scratch_scratch_13 = 0;
    void* kernel_args_[] = {&var_10, &var_11, &global_scratch_scratch_12, &profile_scratch_scratch_13};
    launchKernel(kernels_.triton_poi_fused_2, grid_0, grid_1, grid_2, 1, 0, kernel_args_, stream_, false);
}

template <typename in_ptr0_type_, typename out_ptr0_type_, typename kernels_type_>
static __attribute__((noinline)) void call_triton_poi_fused__softmax_prepare_softmax_online_3(
    const in_ptr0_type_& in_ptr0,
    const out_ptr0_type_& out_ptr0,
    int64_t xnumel,
    int32_t device_idx_,
    cudaStream_t stream_,
    kernels_type_& kernels_,
    const std::optional<std::string>& cubin_dir_ = std::nullopt
){
    /*
    async_compile.triton('triton_poi_fused__softmax_prepare_softmax_online_3', '''
    import triton
    import triton.language as tl

    from torch._inductor.runtime import triton_helpers, triton_heuristics
    from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
    from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
    triton_helpers.set_driver_to_gpu()

    @triton_heuristics.pointwise(
        size_hints={'x': 32}, 
        filename=__file__,
        triton_meta={'signature': {'in_ptr0': '*fp32', 'out_ptr0': '*fp32', 'xnumel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]]}]},
        inductor_meta={'grid_type': 'Grid1D', 'kernel_name': 'triton_poi_fused__softmax_prepare_softmax_online_3', 'mutated_arg_names': [], 'optimize_mem': True, 'no_x_dim': False, 'atomic_add_found': False, 'num_load': 5, 'num_store': 1, 'num_reduction': 0, 'autotune_hints': (), 'tiling_scores': {'x': 384}, 'backend_hash': 'A8D4B7AD1D7B76382BCCD53B62B20933A68DF17A6D0B3F8D0003D25864098BD5', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': False, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'incremental_autotune': False, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': True, 'deterministic': False, 'batch_invariant': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': True, 'dynamic_disable_pipelining': True, 'are_deterministic_algorithms_enabled': False},
        min_elem_per_thread=0
    )
    @triton.jit
    def triton_poi_fused__softmax_prepare_softmax_online_3(in_ptr0, out_ptr0, xnumel, XBLOCK : tl.constexpr):
        xnumel = 32
        xoffset = tl.program_id(0) * XBLOCK
        xindex = xoffset + tl.arange(0, XBLOCK)[:]
        xmask = xindex < xnumel
        x2 = xindex
        x1 = xindex // 4
        tmp0 = tl.load(in_ptr0 + (x2), xmask)
        tmp1 = tl.load(in_ptr0 + (4*x1), xmask, eviction_policy='evict_last')
        tmp2 = tl.load(in_ptr0 + (1 + 4*x1), xmask, eviction_policy='evict_last')
        tmp4 = tl.load(in_ptr0 + (2 + 4*x1), xmask, eviction_policy='evict_last')
        tmp6 = tl.load(in_ptr0 + (3 + 4*x1), xmask, eviction_policy='evict_last')
        tmp3 = tl.maximum(tmp1, tmp2, tl.PropagateNan.ALL)
        tmp5 = tl.maximum(tmp3, tmp4, tl.PropagateNan.ALL)
        tmp7 = tl.maximum(tmp5, tmp6, tl.PropagateNan.ALL)
        tmp8 = tmp0 - tmp7
        tmp9 = libdevice.exp(tmp8)
        tmp10 = tmp1 - tmp7
        tmp11 = libdevice.exp(tmp10)
        tmp12 = tmp2 - tmp7
        tmp13 = libdevice.exp(tmp12)
        tmp14 = tmp11 + tmp13
        tmp15 = tmp4 - tmp7
        tmp16 = libdevice.exp(tmp15)
        tmp17 = tmp14 + tmp16
        tmp18 = tmp6 - tmp7
        tmp19 = libdevice.exp(tmp18)
        tmp20 = tmp17 + tmp19
        tmp21 = (tmp9 / tmp20)
        tl.store(out_ptr0 + (x2), tmp21, xmask)
    ''', device_str='cuda')
    */
    uint32_t grid_0 = ((xnumel + (32 - 1)) / (32));
    uint32_t grid_1 = 1;
    uint32_t grid_2 = 1;
    if (grid_0 == 0 || grid_1 == 0 || grid_2 == 0) return;
    if (kernels_.triton_poi_fused__softmax_prepare_softmax_online_3 == nullptr) {
        kernels_.triton_poi_fused__softmax_prepare_softmax_online_3 = loadKernel("/tmp/torchinductor_cg_cg215/c4omuesfbixeerwt7ial3werxbaym7owdhnqymbpcfkphrrr3n4k/cbc5ame7xfhgphw4kjwqbuodyt5avix3jg54maxnw35qaostgbmp.cubin", "triton_poi_fused__softmax_prepare_softmax_online_3", 0, cubin_dir_, &kernels_.loaded_modules_); 
    }
    CUdeviceptr var_14 = reinterpret_cast<CUdeviceptr>(in_ptr0.data_ptr());
    CUdeviceptr var_15 = reinterpret_cast<CUdeviceptr>(out_ptr0.data_ptr());
    int32_t var_16 = xnumel;
    CUdeviceptr global_scratch_scratch_17 = 0;
    CUdeviceptr profile_scratch_scratch_18 = 0;
    void* kernel_args_[] = {&var_14, &var_15, &var_16, &global_scratch_scratch_17, &profile_scratch_scratch_18};
    launchKernel(kernels_.triton_poi_fused__softmax_prepare_softmax_online_3, grid_0, grid_1, grid_2, 1, 0, kernel_args_, stream_, false);
}

namespace torch::aot_inductor {

void AOTInductorModel::_const_run_impl(
    std::vector<AtenTensorHandle>& output_handles,
    DeviceStreamType stream,
    AOTIProxyExecutorHandle proxy_executor
) {}

AOTI_NOINLINE static void check_input_0(
    AtenTensorHandle* input_handles
) {
    ConstantHandle arg6_1 = ConstantHandle(input_handles[0]);
    int32_t arg6_1_dtype;
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_get_dtype(arg6_1, &arg6_1_dtype));

    int32_t arg6_1_expected_dtype = aoti_torch_dtype_float32();
    if (arg6_1_expected_dtype != arg6_1_dtype) {
        std::stringstream ss;
        ss << "input_handles[0]: unmatched dtype, "
           << "expected: " << arg6_1_expected_dtype << "(at::kFloat), "
           << "but got: " << arg6_1_dtype << "\n";
        throw std::runtime_error(std::move(ss).str());
    }
    auto arg6_1_size = arg6_1.sizes();

    if (8 != arg6_1_size[0]) {
        std::stringstream ss;
        ss << "input_handles[0]: unmatched dim value at 0, "
           << "expected: 8, " << "but got: " << arg6_1_size[0]
           << "\n";
        throw std::runtime_error(std::move(ss).str());
    }

    if (16 != arg6_1_size[1]) {
        std::stringstream ss;
        ss << "input_handles[0]: unmatched dim value at 1, "
           << "expected: 16, " << "but got: " << arg6_1_size[1]
           << "\n";
        throw std::runtime_error(std::move(ss).str());
    }
    auto arg6_1_stride = arg6_1.strides();

    if (16 != arg6_1_stride[0]) {
        std::stringstream ss;
        ss << "input_handles[0]: unmatched stride value at 0, "
           << "expected: 16, " << "but got: " << arg6_1_stride[0]
           << "\n";
        throw std::runtime_error(std::move(ss).str());
    }

    if (1 != arg6_1_stride[1]) {
        std::stringstream ss;
        ss << "input_handles[0]: unmatched stride value at 1, "
           << "expected: 1, " << "but got: " << arg6_1_stride[1]
           << "\n";
        throw std::runtime_error(std::move(ss).str());
    }
    int32_t arg6_1_device_type;
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_get_device_type(arg6_1, &arg6_1_device_type));

    int32_t arg6_1_expected_device_type = 1;
    if (arg6_1_expected_device_type != arg6_1_device_type) {
        std::stringstream ss;
        ss << "input_handles[0]: unmatched device type, "
        << "expected: " << arg6_1_expected_device_type << "1(cuda), "
        << "but got: " << arg6_1_device_type << "\n";
        throw std::runtime_error(std::move(ss).str());
    }
}

static bool _check_aoti_runtime_check_inputs_env() {
    const static char* env_var_value = getenv("AOTI_RUNTIME_CHECK_INPUTS");
    const static bool result = env_var_value != nullptr && env_var_value[0] != '0';
    return result;
}

AOTI_NOINLINE static void __check_inputs_outputs(
    AtenTensorHandle* input_handles,
    AtenTensorHandle* output_handles) {
    if (!_check_aoti_runtime_check_inputs_env()){
        return;
    }
    check_input_0(input_handles);
}

void AOTInductorModel::run_impl(
    AtenTensorHandle*
        input_handles, // array of input AtenTensorHandle; handles
                        // are stolen; the array itself is borrowed
    AtenTensorHandle*
        output_handles, // array for writing output AtenTensorHandle; handles
                        // will be stolen by the caller; the array itself is
                        // borrowed
    DeviceStreamType stream,
    AOTIProxyExecutorHandle proxy_executor
) {
    __check_inputs_outputs(input_handles, output_handles);
    auto inputs = steal_from_raw_handles_to_raii_handles(input_handles, 1);
    auto arg6_1 = std::move(inputs[0]);
    [[maybe_unused]] auto& fc_0_weight = constants_->at(0);
    [[maybe_unused]] auto& fc_0_bias = constants_->at(1);
    [[maybe_unused]] auto& fc_1_weight = constants_->at(2);
    [[maybe_unused]] auto& fc_1_bias = constants_->at(3);
    [[maybe_unused]] auto& fc_2_weight = constants_->at(4);

    if ((reinterpret_cast<std::uintptr_t>(arg6_1.data_ptr()) & (16 -1)) != 0) {
        AOTI_TORCH_WARN("Input 0 was compiled as 16-bytes aligned, but it is not aligned at run time. Copying to an aligned tensor to guarantee correctness, but expect a performance hit.");
        AtenTensorHandle arg6_1_aligned;
        AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_clone_preserve_strides(arg6_1, &arg6_1_aligned));
        arg6_1 = std::move(RAIIAtenTensorHandle(arg6_1_aligned));
    }
    inputs.clear();
    [[maybe_unused]] auto& kernels = static_cast<AOTInductorModelKernels&>(*this->kernels_.get());
    if (_check_aoti_runtime_check_inputs_env()) { assert_size_stride(arg6_1, {8L, 16L}, {16L, 1L}, "input"); }

    AOTICudaStreamGuard stream_guard(stream, this->device_idx_);
    static constexpr int64_t int_array_0[] = {8L, 32L};
    static constexpr int64_t int_array_1[] = {32L, 1L};
    AtenTensorHandle buf0_handle;
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_empty_strided(2, int_array_0, int_array_1, cached_torch_dtype_float32, cached_torch_device_type_cuda, this->device_idx_, &buf0_handle));
    RAIIAtenTensorHandle buf0(buf0_handle);
    // Topologically Sorted Source Nodes: [linear], Original ATen: [aten.t, aten.addmm]
    static constexpr int64_t int_array_2[] = {16L, 32L};
    static constexpr int64_t int_array_3[] = {1L, 16L};
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_cuda_mm_out(buf0, arg6_1, wrap_with_raii_handle_if_needed(reinterpret_tensor_wrapper(fc_0_weight, 2, int_array_2, int_array_3, 0L))));
    arg6_1.reset();
    auto buf1 = std::move(buf0);  // reuse
    // Topologically Sorted Source Nodes: [linear, gelu], Original ATen: [aten.addmm, aten.gelu]
    call_triton_poi_fused_addmm_gelu_0(buf1, fc_0_bias, 256L, this->device_idx_, stream, kernels, this->cubin_dir_);
    AtenTensorHandle buf2_handle;
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_empty_strided(2, int_array_0, int_array_1, cached_torch_dtype_float32, cached_torch_device_type_cuda, this->device_idx_, &buf2_handle));
    RAIIAtenTensorHandle buf2(buf2_handle);
    // Topologically Sorted Source Nodes: [linear, gelu, linear_1], Original ATen: [aten.addmm, aten.gelu, aten.t]
    static constexpr int64_t int_array_4[] = {32L, 32L};
    static constexpr int64_t int_array_5[] = {1L, 32L};
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_cuda_mm_out(buf2, buf1, wrap_with_raii_handle_if_needed(reinterpret_tensor_wrapper(fc_1_weight, 2, int_array_4, int_array_5, 0L))));
    buf1.reset();
    auto buf3 = std::move(buf2);  // reuse
    // Topologically Sorted Source Nodes: [linear_1, log, tanh], Original ATen: [aten.addmm, aten.log, aten.tanh]
    call_triton_poi_fused_addmm_log_tanh_1(buf3, fc_1_bias, 256L, this->device_idx_, stream, kernels, this->cubin_dir_);
    static constexpr int64_t int_array_6[] = {4L, };
    static constexpr int64_t int_array_7[] = {1L, };
    AtenTensorHandle buf4_handle;
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_empty_strided(1, int_array_6, int_array_7, cached_torch_dtype_float32, cached_torch_device_type_cuda, this->device_idx_, &buf4_handle));
    RAIIAtenTensorHandle buf4(buf4_handle);
    // Unsorted Source Nodes: [], Original ATen: []
    call_triton_poi_fused_2(buf4, 4L, this->device_idx_, stream, kernels, this->cubin_dir_);
    static constexpr int64_t int_array_8[] = {8L, 4L};
    static constexpr int64_t int_array_9[] = {4L, 1L};
    AtenTensorHandle buf5_handle;
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_empty_strided(2, int_array_8, int_array_9, cached_torch_dtype_float32, cached_torch_device_type_cuda, this->device_idx_, &buf5_handle));
    RAIIAtenTensorHandle buf5(buf5_handle);
    // Topologically Sorted Source Nodes: [linear_1, log, tanh, linear_2], Original ATen: [aten.addmm, aten.log, aten.tanh, aten.t]
    static constexpr int64_t int_array_10[] = {32L, 4L};
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_cuda_addmm_out(buf5, buf4, buf3, wrap_with_raii_handle_if_needed(reinterpret_tensor_wrapper(fc_2_weight, 2, int_array_10, int_array_5, 0L)), 1L, 1L));
    buf3.reset();
    buf4.reset();
    AtenTensorHandle buf6_handle;
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_empty_strided(2, int_array_8, int_array_9, cached_torch_dtype_float32, cached_torch_device_type_cuda, this->device_idx_, &buf6_handle));
    RAIIAtenTensorHandle buf6(buf6_handle);
    // Topologically Sorted Source Nodes: [softmax], Original ATen: [prims.prepare_softmax_online, aten._softmax]
    call_triton_poi_fused__softmax_prepare_softmax_online_3(buf5, buf6, 32L, this->device_idx_, stream, kernels, this->cubin_dir_);
    buf5.reset();
    output_handles[0] = buf6.release();
} // AOTInductorModel::run_impl
} // namespace torch::aot_inductor




// Compile cmd
// g++ /tmp/torchinductor_cg_cg215/c4omuesfbixeerwt7ial3werxbaym7owdhnqymbpcfkphrrr3n4k/c52zo6rkfuzyhizer2skv5wpcinxpe7wytb5le4eatvpcabipywy.wrapper.cpp -D TORCH_INDUCTOR_CPP_WRAPPER -D STANDALONE_TORCH_HEADER -D TORCH_INDUCTOR_PRECOMPILE_HEADERS -D  C10_USING_CUSTOM_GENERATED_MACROS -D CPU_CAPABILITY_AVX512 -D  USE_CUDA  -O1 -DNDEBUG -fno-omit-frame-pointer -g1 -fno-trapping-math -funsafe-math-optimizations -ffinite-math-only -fno-signed-zeros -fno-finite-math-only -fno-unsafe-math-optimizations -fmath-errno -ffp-contract=off -fexcess-precision=fast -fno-tree-loop-vectorize -march=native -fPIC -Wall -std=c++20 -Wno-unused-variable -Wno-unknown-pragmas -pedantic -fopenmp  -include /tmp/torchinductor_root/precompiled_headers/cfx3nds2cqnu32mvbahvcewl4r5tjcay3d2fgcojmow6ul4b3kz7.h -I/root/.pyenv/versions/3.11.7/include/python3.11 -I/root/.cache/aoti-bisect/venv-2.15.0/lib/python3.11/site-packages/torch/include -I/root/.cache/aoti-bisect/venv-2.15.0/lib/python3.11/site-packages/torch/include/torch/csrc/api/include -I/usr/local/cuda/include   -mavx512f -mavx512dq -mavx512vl -mavx512bw -mfma -mavx512vnni -mavx512vl  -c -o /tmp/torchinductor_cg_cg215/c4omuesfbixeerwt7ial3werxbaym7owdhnqymbpcfkphrrr3n4k/c52zo6rkfuzyhizer2skv5wpcinxpe7wytb5le4eatvpcabipywy.wrapper.o
// Link cmd
// g++ /tmp/torchinductor_cg_cg215/c4omuesfbixeerwt7ial3werxbaym7owdhnqymbpcfkphrrr3n4k/c52zo6rkfuzyhizer2skv5wpcinxpe7wytb5le4eatvpcabipywy.wrapper.o /tmp/torchinductor_cg_cg215/c4omuesfbixeerwt7ial3werxbaym7owdhnqymbpcfkphrrr3n4k/clxpa7vpfln36xdqms7n75n7qa2gt5lkzalbxno6zw46cm4g346i.kernel.o /tmp/torchinductor_cg_cg215/c4omuesfbixeerwt7ial3werxbaym7owdhnqymbpcfkphrrr3n4k/c52zo6rkfuzyhizer2skv5wpcinxpe7wytb5le4eatvpcabipywy/c6nugmmknx3mrlpy7x6hbhknlbubyxnduh4f2ideickg2c5wbugm.weights.o -D TORCH_INDUCTOR_CPP_WRAPPER -D STANDALONE_TORCH_HEADER -D TORCH_INDUCTOR_PRECOMPILE_HEADERS -D  C10_USING_CUSTOM_GENERATED_MACROS -D CPU_CAPABILITY_AVX512 -D  USE_CUDA  -O3 -DNDEBUG -fno-omit-frame-pointer -g1 -fno-trapping-math -funsafe-math-optimizations -ffinite-math-only -fno-signed-zeros -fno-finite-math-only -fno-unsafe-math-optimizations -fmath-errno -ffp-contract=off -fexcess-precision=fast -fno-tree-loop-vectorize -march=native -shared -fPIC -Wall -std=c++20 -Wno-unused-variable -Wno-unknown-pragmas -pedantic -fopenmp  -I/root/.pyenv/versions/3.11.7/include/python3.11 -I/root/.cache/aoti-bisect/venv-2.15.0/lib/python3.11/site-packages/torch/include -I/root/.cache/aoti-bisect/venv-2.15.0/lib/python3.11/site-packages/torch/include/torch/csrc/api/include -I/usr/local/cuda/include   -mavx512f -mavx512dq -mavx512vl -mavx512bw -mfma -mavx512vnni -mavx512vl  -o /tmp/torchinductor_cg_cg215/c4omuesfbixeerwt7ial3werxbaym7owdhnqymbpcfkphrrr3n4k/c52zo6rkfuzyhizer2skv5wpcinxpe7wytb5le4eatvpcabipywy.wrapper.so  -ltorch -ltorch_cpu -lgomp -lcuda -ltorch_cuda  -L/root/.pyenv/versions/3.11.7/lib -L/root/.cache/aoti-bisect/venv-2.15.0/lib/python3.11/site-packages/torch/lib -L/usr/local/cuda-13.0/lib 
