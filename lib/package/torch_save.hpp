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
// and the path, a torch.save archive:
// - whose entries declare more than zip_expansion_cap of its size, or that
//   holds one entry name twice, or that is a damaged zip archive;
// - whose data.pkl is not a pickle LibTorch reads (an unknown opcode, a
//   truncated stream, a storage reference of another form);
// - with a storage whose element count times its element size is not the
//   size of its record (data/<key>);
// - with a tensor whose shape and strides reach past its storage, or whose
//   elements (what a contiguous copy takes) pass the cap, each or in all.
// A file that is not a zip archive at all is left to the loader, which says
// so in its own words.
void check_torch_save(const std::filesystem::path& path, const std::string& what);

// The pickle part alone (for tests and fuzzing): `pickle` is data.pkl's
// bytes, `record_size(key)` the declared size of data/<key> (-1 when there
// is none), `archive_bytes` the file's size (its tensors' cap is
// zip_expansion_cap of it). Errors read "<what> '<path>' ...".
void check_torch_pickle(const std::string& pickle, const std::function<std::int64_t(const std::string&)>& record_size,
                        uint64_t archive_bytes, const std::string& what, const std::filesystem::path& path);

}  // namespace aoti_bisect
