#pragma once
// A torch-free look at a torch.save file (an inputs or reference file) before
// any child loads it. LibTorch's C++ unpickler trusts what the file says:
// it allocates each record's declared size, gives a storage the element count
// its pickle claims whatever its record holds (reading past the record: a
// crash that would pass for the model's own), and rebuilds views whose shape
// and strides ask for far more memory than the file holds (a zero stride).

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

namespace aoti_bisect {

// Refuses, with Error(cannot_test) and one line naming `what` ("inputs file")
// and the path, a pickle LibTorch would load past what its file holds:
// - one LibTorch does not read (an unknown opcode, a truncated stream, a
//   storage reference of another form);
// - a storage whose element count times its element size is not the size
//   of its record;
// - a tensor whose shape and strides reach past its storage, or whose
//   elements (what a contiguous copy takes) pass the cap, each or in all.
// inputs/tensor_file.hpp check_tensor_file applies it to every inputs and
// reference file (zip, legacy or safetensors) before any child loads one.
//
// `pickle` is data.pkl's
// bytes, `record_size(key)` the declared size of data/<key> (-1 when there
// is none), `archive_bytes` the file's size (its tensors' cap is
// zip_expansion_cap of it). Errors read "<what> '<path>' ...".
// The element size of a storage type as a pickle names it ("torch
// FloatStorage" -> 4, "torch.storage UntypedStorage" -> 1); 0 when unknown.
uint64_t storage_item_size(const std::string& type);

void check_torch_pickle(const std::string& pickle, const std::function<std::int64_t(const std::string&)>& record_size,
                        uint64_t archive_bytes, const std::string& what, const std::filesystem::path& path);

}  // namespace aoti_bisect
