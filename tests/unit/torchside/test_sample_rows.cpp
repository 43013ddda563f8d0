// One sample's saved values alone against the batch's (lib/torchside/sample_rows.cpp):
// the driver's reference read, a saved value compared by the sample's rows,
// and what happens when a file is missing or the reference is malformed.
#include <filesystem>
#include <fstream>
#include <string>

#include "common/error.hpp"
#include "torch_doctest.hpp"
#include "torchside/internal.hpp"

using namespace aoti_bisect;
using namespace aoti_bisect::torchside;
namespace fs = std::filesystem;

namespace {

// A folder of saved values, removed with it.
struct SavedValues {
  fs::path dir = fs::temp_directory_path() / ("aoti-bisect-sample-rows-" + std::to_string(::getpid()));
  SavedValues() { fs::create_directories(dir); }
  ~SavedValues() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::string save(const at::Tensor& t, const std::string& name) const {
    std::vector<char> bytes = torch::jit::pickle_save(t);
    std::ofstream(dir / name, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return (dir / name).string();
  }
};

}  // namespace

TEST_CASE("unravel_index: a flat row-major index as one per dimension") {
  CHECK(unravel_index(0, {2, 3, 4}) == std::vector<int64_t>{0, 0, 0});
  CHECK(unravel_index(7, {2, 3, 4}) == std::vector<int64_t>{0, 1, 3});
  CHECK(unravel_index(23, {2, 3, 4}) == std::vector<int64_t>{1, 2, 3});
  CHECK(unravel_index(5, {6}) == std::vector<int64_t>{5});
  CHECK(unravel_index(0, {}).empty());
}

TEST_CASE("read_sample_references: rows, each sample's own alone batch, its files by call site and tensor") {
  nlohmann::json j = nlohmann::json::parse(R"({"rows": {"batch": 4, "alone": 2},
      "samples": [{"sample": 2, "sites": {"3": {"buf1": "/x/a.pt"}, "7": {"buf4": "/x/b.pt"}}},
                  {"sample": 0, "alone": 1, "sites": {}}]})");
  auto refs = read_sample_references(j, "ref.json");
  REQUIRE(refs.size() == 2);
  CHECK(refs[0].rows.batch == 4);
  CHECK(refs[0].rows.alone == 2);
  CHECK(refs[0].rows.sample == 2);
  CHECK(refs[0].files.at({3, "buf1"}) == "/x/a.pt");
  CHECK(refs[0].files.at({7, "buf4"}) == "/x/b.pt");
  CHECK(refs[1].rows.alone == 1);
  CHECK(refs[1].files.empty());
}

TEST_CASE("read_sample_references: a malformed reference is cannot_test, naming the file") {
  auto malformed = [](const char* text) {
    try {
      read_sample_references(nlohmann::json::parse(text), "/w/ref.json");
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::cannot_test);
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  const std::string line = "the per-site reference '/w/ref.json' is malformed";
  CHECK(malformed(R"({"rows": {"batch": 0, "alone": 1}, "samples": []})") == line);
  CHECK(malformed(R"({"rows": {"batch": 4, "alone": 1}})") == line);
  CHECK(malformed(R"({"rows": {"batch": 4, "alone": 1}, "samples": [{"sample": 4, "sites": {}}]})") == line);
  CHECK(malformed(R"({"rows": {"batch": 4, "alone": 1}, "samples": [{"sample": 1}]})") == line);
}

TEST_CASE("compare_samples: each sample that saved the tensor, compared by its rows; an unreadable file said so") {
  SavedValues saved;
  at::Tensor batch = at::arange(4 * 3, at::kFloat).reshape({4, 3});
  SampleReference same;
  same.rows = SampleRows{4, 1, 1};
  same.files[{5, "buf2"}] = saved.save(batch.narrow(0, 1, 1).clone(), "same.pt");
  SampleReference differs;
  differs.rows = SampleRows{4, 1, 3};
  at::Tensor alone3 = batch.narrow(0, 3, 1).clone();
  alone3[0][2] = -1.0f;  // alone, sample 4's last element is -1; in the batch, 11
  differs.files[{5, "buf2"}] = saved.save(alone3, "differs.pt");
  SampleReference missing;
  missing.rows = SampleRows{4, 1, 0};
  missing.files[{5, "buf2"}] = "/nonexistent/aoti-bisect/none.pt";
  SampleReference other_site;
  other_site.rows = SampleRows{4, 1, 2};
  other_site.files[{6, "buf2"}] = same.files[{5, "buf2"}];

  nlohmann::json each = compare_samples(batch, 5, "buf2", {same, differs, missing, other_site});
  REQUIRE(each.size() == 3);  // the sample that saved another site's tensor is left out
  CHECK(each[0]["sample"] == 1);
  CHECK(each[0]["differ"] == 0);
  CHECK(each[0]["rows"] == nlohmann::json{{"dim", 0}, {"from", 1}, {"count", 1}});
  CHECK(each[1]["sample"] == 3);
  CHECK(each[1]["differ"] == 1);
  CHECK(each[1]["worst"] == nlohmann::json{3, 2});  // in the batch's own indices
  CHECK(each[1]["actual"] == 11.0);
  CHECK(each[1]["expected"] == -1.0);
  CHECK(each[2]["sample"] == 0);
  CHECK(each[2]["unmatched"].get<std::string>().rfind("its value alone cannot be read: ", 0) == 0);
  CHECK(compare_samples(batch, 9, "buf2", {same}).empty());
}
