// End-to-end: `aoti-bisect capture`'s options and harder programs, on real
// hosts (examples/hosts/): a streaming model with a ring buffer whose call 5
// fails only after calls 1 to 4 (--then-run), --call N, --every, --package,
// workers started by fork and by spawn, and a disk that fills. Asserts on
// capture.json, on the kept files loaded back, and on the run that follows.

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <filesystem>

#include <doctest/doctest.h>

#include "e2e/capture_helpers.hpp"
#include "e2e/e2e.hpp"
#include "skip.hpp"

namespace fs = std::filesystem;
using e2e::example;
using e2e::run_tool;
using Json = nlohmann::json;
using namespace capture_test;

namespace {

int count_of(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) {
    ++n;
  }
  return n;
}

bool any_note(const Json& cap, const std::string& what) {
  for (const auto& n : cap["notes"]) {
    if (n.get<std::string>().find(what) != std::string::npos) {
      return true;
    }
  }
  return false;
}

// loop_nan.py's batch for step k (torch.manual_seed(0), one randn per step), compared with each kept file.
std::string loop_batches_match(const std::vector<std::pair<int, std::string>>& kept) {
  std::vector<std::string> args;
  for (const auto& [step, file] : kept) {
    args.push_back(std::to_string(step));
    args.push_back(fs::absolute(file).string());
  }
  return e2e::python(
      "import sys, torch\n"
      "torch.manual_seed(0)\n"
      "batches = [torch.randn(8, 16) for _ in range(6)]\n"
      "pairs = sys.argv[1:]\n"
      "for step, path in zip(pairs[::2], pairs[1::2]):\n"
      "    x = torch.load(path, weights_only=True)[0]\n"
      "    print(step, torch.equal(x, batches[int(step) - 1]))\n",
      args);
}

}  // namespace

TEST_SUITE_BEGIN("e2e/capture");

TEST_CASE("a ring buffer that fails at call 5 only after calls 1 to 4: run_command replays them, --then-run searches") {
  auto r = run_tool({"capture", "--out", "cap", "--then-run", "--", python_exe(), host_script("stream_ring.py").string(),
                     example("ring_buffer_stream.pt2").string(), "6"},
                    "", e2e::warm_inductor());
  CHECK(r.out.find("frame 4: 0 NaN in the outputs") != std::string::npos);
  CHECK(r.out.find("frame 5: 128 NaN in the outputs") != std::string::npos);
  Json cap = capture_json("cap");
  REQUIRE(cap["calls"].size() == 6);
  for (int i = 0; i < 6; ++i) {
    CHECK(cap["calls"][i]["status"] == (i < 4 ? "ok" : "nonfinite"));
  }
  const Json& bad = cap["first_bad"];
  REQUIRE(bad.is_object());
  CHECK(bad["index"] == 5);
  CHECK(bad["alone"] == false);  // the ring holds zeros beside frame 5 in a fresh process
  REQUIRE(bad["history"].size() == 4);
  REQUIRE(bad["inputs"].size() == 1);
  CHECK(any_note(cap, "call 5 alone in a fresh process does not fail: run_command replays the 5 kept calls"));
  const std::string cmd = cap["run_command"].get<std::string>();
  CHECK(count_of(cmd, " --inputs ") == 5);
  // The kept frames as the host made them: feature 0 is 1 in frame 1, 2 after.
  std::vector<std::string> files;
  for (const auto& h : bad["history"]) {
    files.push_back(fs::absolute(h.get<std::string>()).string());
  }
  files.push_back(fs::absolute(bad["inputs"][0].get<std::string>()).string());
  std::string firsts = e2e::python(
      "import sys, torch\n"
      "print([float(torch.load(p, weights_only=True)[0][0, 0]) for p in sys.argv[1:]])\n",
      files);
  CHECK(firsts == "[1.0, 2.0, 2.0, 2.0, 2.0]\n");
  // --then-run: `run` on the history, into cap/run/, its exit code capture's.
  CHECK(r.code() == 1);
  Json report = Json::parse(e2e::read_text("cap/run/report.json"), nullptr, false);
  REQUIRE(report.is_object());
  CHECK(report["verdict"] == "isolated");
  CHECK(report["needs_history"] == true);
  CHECK(report["failure"]["batch"]["index"] == 4);
  CHECK(report["failure"]["kind"] == "nonfinite");
  CHECK(report["culprit"]["kernel"].get<std::string>().find("div") != std::string::npos);
}

TEST_CASE("--call N keeps that call alone; --every keeps every call; the files hold the batches the loop passed") {
  auto one = run_tool({"capture", "--out", "c1", "--call", "2", "--", python_exe(), host_script("loop_nan.py").string(),
                       example("zero_row_norm.pt2").string()},
                      "");
  CHECK(one.code() == 0);
  Json cap = capture_json("c1");
  REQUIRE(cap["calls"].size() == 6);
  CHECK(cap["calls"][1]["kept"] == true);
  CHECK(cap["calls"][0]["kept"] == false);
  CHECK(cap["calls"][0]["not_kept"] == "not call 2 (--call)");
  REQUIRE(cap["kept"].size() == 1);
  CHECK(cap["kept"][0]["index"] == 2);
  CHECK(cap["kept"][0]["run_command"].get<std::string>().find("--inputs c1/calls/call-2.pt") != std::string::npos);
  CHECK(one.out.find("--inputs c1/calls/call-2.pt") != std::string::npos);
  CHECK(cap["first_bad"]["index"] == 4);  // still found, and said not kept
  CHECK(cap["first_bad"]["inputs"].empty());
  CHECK(cap["run_command"].is_null());
  CHECK(any_note(cap, "call 4's inputs were not kept: not call 2 (--call)"));
  CHECK(loop_batches_match({{2, "c1/calls/call-2.pt"}}) == "2 True\n");

  auto every = run_tool({"capture", "--out", "c2", "--every", "--", python_exe(), host_script("loop_nan.py").string(),
                         example("zero_row_norm.pt2").string(), "0"},
                        "");
  CHECK(every.code() == 0);
  Json all = capture_json("c2");
  CHECK(all["first_bad"].is_null());
  CHECK(every.out.find("capture: 6 calls in 1 process, none bad (the program exit 0)") != std::string::npos);
  REQUIRE(all["kept"].size() == 6);
  std::vector<std::pair<int, std::string>> kept;
  for (const auto& k : all["kept"]) {
    kept.emplace_back(k["index"].get<int>(), k["inputs"].get<std::string>());
  }
  CHECK(loop_batches_match(kept) == "1 True\n2 True\n3 True\n4 True\n5 True\n6 True\n");
  CHECK(every.out.find("... and 1 more (capture.json kept[])") != std::string::npos);
}

TEST_CASE("--package NAME: that package's calls recorded and kept, the other package's counted") {
  auto r = run_tool({"capture", "--out", "cap", "--package", "zero_row_norm", "--", python_exe(),
                     host_script("two_packages.py").string(), example("healthy.pt2").string(),
                     example("zero_row_norm.pt2").string(), "2"},
                    "");
  CHECK(r.code() == 0);
  CHECK(r.out.find("round 2 healthy.pt2: 0 NaN") != std::string::npos);
  Json cap = capture_json("cap");
  REQUIRE(cap["calls"].size() == 2);
  for (const auto& c : cap["calls"]) {
    CHECK(c["package"].get<std::string>().find("zero_row_norm.pt2") != std::string::npos);
  }
  CHECK(any_note(cap, "2 calls of other packages than 'zero_row_norm' passed through unrecorded (--package)"));
  REQUIRE(cap["first_bad"].is_object());
  CHECK(cap["first_bad"]["index"] == 1);
  CHECK(cap["first_bad"]["alone"] == true);
}

TEST_CASE("workers started by fork and by spawn: every process's calls counted, the bad one found in its worker") {
  for (const std::string method : {"spawn", "fork"}) {
    CAPTURE(method);
    const std::string out = "cap-" + method;
    auto r = run_tool({"capture", "--out", out, "--", python_exe(), host_script("workers.py").string(),
                       example("zero_row_norm.pt2").string(), method},
                      "");
    CHECK(r.code() == 0);
    CHECK(r.out.find("worker 1 step 2: 4 NaN") != std::string::npos);
    Json cap = capture_json(out);
    CHECK(cap["processes"] == 3);
    REQUIRE(cap["calls"].size() == 7);
    int nonfinite = 0;
    for (const auto& c : cap["calls"]) {
      nonfinite += c["status"] == "nonfinite" ? 1 : 0;
    }
    CHECK(nonfinite == 1);
    const Json& bad = cap["first_bad"];
    REQUIRE(bad.is_object());
    CHECK(bad["index"] == 2);  // the worker's own second call
    const std::string pid = std::to_string(bad["process"].get<long>());
    REQUIRE(bad["inputs"].size() == 1);
    CHECK(bad["inputs"][0] == out + "/calls/" + pid + "/call-2.pt");
    CHECK(bad["alone"] == true);
    CHECK(bad["history"].size() == 1);  // the worker's call 1; the parent's call is another process's
  }
}

TEST_CASE("a package the tool cannot read once the program ends: one line naming it, the calls still counted") {
  // The program loads a copy of the package, calls it, then overwrites the copy.
  fs::copy_file(example("zero_row_norm.pt2"), "copy.pt2", fs::copy_options::overwrite_existing);
  auto r = run_tool({"capture", "--out", "cap", "--", python_exe(), "-c",
                     "import sys, torch\n"
                     "m = torch._inductor.aoti_load_package('copy.pt2')\n"
                     "x = torch.randn(8, 16)\n"
                     "x[3] = 0\n"
                     "print('NaN:', int(m(x).isnan().sum()))\n"
                     "open('copy.pt2', 'wb').write(b'not a zip')\n"},
                    "");
  CHECK(r.out.find("NaN: 4") != std::string::npos);
  CHECK(r.code() == 0);
  Json cap = capture_json("cap");
  REQUIRE(cap["calls"].size() == 1);
  CHECK(cap["calls"][0]["status"] == "nonfinite");
  CHECK(cap["first_bad"]["index"] == 1);
  CHECK(cap["run_command"].is_null());
  CHECK(count_of(r.out, "capture: package 'copy.pt2' cannot be read: ") == 1);
  CHECK(any_note(cap, "package 'copy.pt2' cannot be read: "));
  CHECK(any_note(cap, "the package of the bad call is not known (no .pt2 capture could read holds its library)"));
}

// The disk fills while the program runs: calls past capture's reserve are
// not kept and say why; with no reserve a write cut short is removed, never
// presented as kept, and capture.json that cannot be written is one line.
TEST_CASE("capture on a full disk: calls past the reserve not kept and said why, nothing half-written kept") {
  fs::path mount = fs::absolute("capture-disk");
  fs::create_directories(mount);
  if (::mount("tmpfs", mount.c_str(), "tmpfs", 0, "size=40m") != 0) {
    aoti_bisect::test::skip("mounting a tmpfs needs root: capture on a full disk");
    return;
  }
  auto fill_to = [&](long long left) {
    struct statvfs v {};
    REQUIRE(::statvfs(mount.c_str(), &v) == 0);
    const long long free_now = static_cast<long long>(v.f_bavail) * static_cast<long long>(v.f_frsize);
    int fd = ::open((mount / "filler").c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
    REQUIRE(fd >= 0);
    REQUIRE(::posix_fallocate(fd, 0, free_now - left) == 0);
    ::close(fd);
  };
  fill_to((16LL << 20) + (20 << 10));  // the reserve and 20 KiB: two calls' files (a page each) and events
  auto r = run_tool({"capture", "--out", (mount / "cap").string(), "--", python_exe(),
                     host_script("loop_nan.py").string(), example("zero_row_norm.pt2").string(), "6"},
                    "");
  Json cap = Json::parse(e2e::read_text(mount / "cap" / "capture.json"), nullptr, false);
  std::vector<std::string> tmp;
  for (const auto& e : fs::recursive_directory_iterator(mount / "cap")) {
    if (e.path().filename().string().find(".tmp") != std::string::npos) {
      tmp.push_back(e.path().string());
    }
  }
  std::string loaded;
  if (cap.is_object() && cap["kept"].is_array()) {
    std::vector<std::pair<int, std::string>> kept;
    for (const auto& k : cap["kept"]) {
      kept.emplace_back(k["index"].get<int>(), k["inputs"].get<std::string>());
    }
    loaded = loop_batches_match(kept);
  }
  // No reserve: the writes themselves run out of room.
  fs::remove(mount / "filler");
  fill_to(12 << 10);
  auto none = run_tool({"capture", "--out", (mount / "cap0").string(), "--", python_exe(),
                        host_script("loop_nan.py").string(), example("zero_row_norm.pt2").string(), "6"},
                       "", {{"AOTI_BISECT_CAPTURE_RESERVE", "0"}});
  std::vector<std::string> raw_left;
  for (const auto& e : fs::recursive_directory_iterator(mount / "cap0")) {
    raw_left.push_back(e.path().filename().string());
  }
  ::umount(mount.c_str());

  CHECK(r.code() == 0);
  REQUIRE(cap.is_object());
  REQUIRE(cap["calls"].size() == 6);
  CHECK(cap["calls"][0]["kept"] == true);
  CHECK(cap["calls"][1]["kept"] == true);
  for (int i = 2; i < 6; ++i) {
    CAPTURE(i);
    CHECK(cap["calls"][i]["kept"] == false);
    CHECK(cap["calls"][i]["not_kept"].get<std::string>().find("bytes capture leaves free for its report") !=
          std::string::npos);
  }
  CHECK(cap["first_bad"]["index"] == 6);
  CHECK(cap["first_bad"]["inputs"].empty());
  CHECK(any_note(cap, "call 6's inputs were not kept: the disk holding the capture folder has "));
  CHECK(loaded == "1 True\n2 True\n");
  CHECK(tmp.empty());

  CAPTURE(none.out);
  CAPTURE(none.err);
  CHECK(none.out.find("step 6: 4 NaN in the outputs") != std::string::npos);  // the program ran on
  for (const auto& name : raw_left) {
    CAPTURE(name);
    CHECK(name.find(".tmp") == std::string::npos);
    if (name.rfind("call-", 0) == 0 && name.size() > 5 && name.substr(name.size() - 4) == ".bin") {
      // a .bin left behind has its .json: both whole
      bool has_json = false;
      for (const auto& other : raw_left) {
        has_json = has_json || other == name.substr(0, name.size() - 4) + ".json";
      }
      CHECK(has_json);
    }
  }
  if (none.code() == 5) {
    CHECK(e2e::error_line(none).find("No space left on device") != std::string::npos);
  } else {
    CHECK(none.code() == 0);
  }
}

TEST_SUITE_END();
