// The run's surroundings under stress: signals in every phase, a driver that
// is SIGKILLed, two runs into one folder, a folder that cannot be written or
// fills up, paths spelled to slip past redaction, the child's memory limit.

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include "common/files.hpp"
#include "e2e/e2e.hpp"
#include "skip.hpp"

namespace fs = std::filesystem;
using e2e::example;
using e2e::run_tool;

namespace {

std::vector<std::string> healthy_args(const std::string& out) {
  return {
      "run", example("healthy.pt2").string(), "--inputs", example("healthy.inputs.pt").string(), "--no-matrix", "--out",
      out};
}

std::vector<std::string> with_limit(const std::string& limit) {
  return {"run",         example("healthy.pt2").string(),
          "--inputs",    example("healthy.inputs.pt").string(),
          "--no-matrix", "--memory-limit",
          limit};
}

aoti_bisect::SpawnSpec tool_spec(const std::vector<std::string>& args, const std::string& tag,
                                 const std::map<std::string, std::string>& env = {}) {
  aoti_bisect::SpawnSpec spec;
  spec.argv = {AOTI_BISECT_BIN};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.env = aoti_bisect::current_environment();
  spec.env["AOTI_BISECT_RUNNER"] = AOTI_BISECT_RUNNER_BIN;
  for (const auto& [k, v] : env) {
    spec.env[k] = v;
  }
  spec.stdout_path = fs::absolute(tag + ".stdout.txt");
  spec.stderr_path = fs::absolute(tag + ".stderr.txt");
  spec.timeout_s = 600;
  spec.tail_bytes = 1 << 20;
  return spec;
}

// Waits (up to `seconds`) until `ready` holds.
bool wait_for(const std::function<bool()>& ready, double seconds) {
  for (int i = 0; i < seconds * 20; ++i) {
    if (ready()) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return ready();
}

bool has_entry(const fs::path& dir, const std::string& prefix) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().filename().string().rfind(prefix, 0) == 0) {
      return true;
    }
  }
  return false;
}

// The pid of the driver that works in `out` (its .work-<pid> folder).
int driver_pid(const fs::path& out) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(out, ec)) {
    std::string n = e.path().filename().string();
    if (n.rfind(".work-", 0) == 0) {
      return std::stoi(n.substr(6));
    }
  }
  return -1;
}

nlohmann::json read_report(const fs::path& out) {
  std::ifstream in(out / "report.json");
  return in ? nlohmann::json::parse(in, nullptr, false) : nlohmann::json();
}

// Processes whose command line mentions `text` (the helpers of one cache).
int processes_mentioning(const std::string& text) {
  int n = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    std::ifstream in(e.path() / "cmdline", std::ios::binary);
    std::string cmd((std::istreambuf_iterator<char>(in)), {});
    if (cmd.find(text) != std::string::npos && e.path().filename() != std::to_string(::getpid())) {
      ++n;
    }
  }
  return n;
}

// A runner that never answers: the driver's children for the SIGKILL test.
fs::path sleeping_runner() {
  fs::path p = fs::absolute("aoti-bisect-sleeping-runner.sh");
  std::ofstream(p) << "#!/bin/sh\nwhile :; do sleep 1; done\n";
  fs::permissions(p, fs::perms::owner_all);
  return p;
}

// A runner that forks a helper of its own (a shell loop named
// aoti-bisect-grandchild, in the runner's process group), then never answers.
fs::path forking_runner() {
  fs::path p = fs::absolute("aoti-bisect-forking-runner.sh");
  std::ofstream(p) << "#!/bin/sh\nsh -c 'while :; do sleep 1; done' aoti-bisect-grandchild &\n"
                      "while :; do sleep 1; done\n";
  fs::permissions(p, fs::perms::owner_all);
  return p;
}

// A tmpfs of `size` (read-only when asked) at `dir`; false where mounting
// is not allowed (not root), and the test says it was skipped.
bool mount_tmpfs(const fs::path& dir, const std::string& options) {
  fs::create_directories(dir);
  return ::mount("tmpfs", dir.c_str(), "tmpfs", options.find("ro") == 0 ? MS_RDONLY : 0, options.c_str()) == 0;
}

}  // namespace

TEST_SUITE_BEGIN("e2e/out_folder");

TEST_CASE("interrupts in the build and eager phases: exit 130, verdict interrupted, no helper or temp folder left") {
  struct Case {
    std::string name;
    std::vector<std::string> args;
    int signal;
    std::string phase;
  };
  std::string pkg = example("nan_midway.pt2").string();
  std::string ep = example("nan_midway.ep.pt2").string();
  std::vector<Case> cases = {
      {"build",
       {"run", pkg, "--inputs", example("nan_midway.inputs.pt").string(), "--no-matrix", "--source", "exported_program",
        "--no-judge", "--exported-program", ep, "--exit-codes", "git-bisect"},
       SIGINT,
       "build phase"},
      {"eager",
       {"run", example("healthy.pt2").string(), "--inputs", example("healthy.inputs.pt").string(), "--no-matrix",
        "--against-eager", "--no-judge", "--exported-program", example("healthy.ep.pt2").string()},
       SIGTERM,
       "reference phase"},
      {"hangup",
       {"run", pkg, "--inputs", example("nan_midway.inputs.pt").string(), "--no-matrix", "--source", "exported_program",
        "--no-judge", "--exported-program", ep},
       SIGHUP,
       "build phase"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.name);
    fs::path cache = fs::absolute("cache-int-" + c.name);
    fs::path out = fs::absolute("out-int-" + c.name);
    fs::remove_all(cache);
    fs::remove_all(out);
    auto args = c.args;
    args.insert(args.end(), {"--cache-dir", cache.string(), "--out", out.string()});
    aoti_bisect::ProcessSet set;
    set.start(tool_spec(args, "int-" + c.name));
    // The helper is at work once its scratch folder exists.
    REQUIRE(wait_for([&] { return has_entry(cache / "tmp", "build-"); }, 120));
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    int pid = driver_pid(out);
    REQUIRE(pid > 0);
    ::kill(pid, c.signal);
    auto [token, status] = set.wait_any();
    CHECK(status.how == aoti_bisect::ExitStatus::How::exited);
    CHECK(status.exit_code == 130);  // also under --exit-codes git-bisect
    auto report = read_report(out);
    CHECK(report["verdict"] == "interrupted");
    CHECK(report["verdict_reason"].get<std::string>().find(c.phase) != std::string::npos);
    CHECK(report["verdict_reason"].get<std::string>().find(aoti_bisect::signal_name(c.signal)) != std::string::npos);
    CHECK_FALSE(has_entry(cache / "tmp", "build-"));
    CHECK_FALSE(has_entry(out, ".work-"));
    CHECK(processes_mentioning(cache.string()) == 0);
  }
}

TEST_CASE("`aoti-bisect build` interrupted: its helper is killed, its work folder removed, exit 130") {
  fs::path cache = fs::absolute("cache-build-int");
  fs::remove_all(cache);
  aoti_bisect::ProcessSet set;
  int token = set.start(
      tool_spec({"build", example("nan_midway.ep.pt2").string(), "--cache-dir", cache.string()}, "build-int"));
  REQUIRE(wait_for([&] { return has_entry(cache / "tmp", "build-"); }, 120));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  // The driver is the child the set started; its group is its pid.
  int pid = -1;
  for (const auto& e : fs::directory_iterator("/proc")) {
    std::ifstream in(e.path() / "cmdline", std::ios::binary);
    std::string cmd((std::istreambuf_iterator<char>(in)), {});
    if (cmd.rfind(AOTI_BISECT_BIN, 0) == 0 && cmd.find(cache.string()) != std::string::npos) {
      pid = std::stoi(e.path().filename().string());
    }
  }
  REQUIRE(pid > 0);
  ::kill(pid, SIGINT);
  auto [tok, status] = set.wait_any();
  CHECK(tok == token);
  CHECK(status.exit_code == 130);
  CHECK(status.stderr_tail.find("aoti-bisect: interrupted by SIGINT") != std::string::npos);
  CHECK_FALSE(has_entry(cache / "tmp", "build-"));
  CHECK(processes_mentioning(cache.string()) == 0);
}

TEST_CASE(
    "a SIGKILLed driver takes its runners and their own children with it; the next run into the folder "
    "cleans up and says so") {
  fs::path out = fs::absolute("out-killed");
  fs::remove_all(out);
  aoti_bisect::ProcessSet set;
  set.start(tool_spec(healthy_args(out.string()), "killed", {{"AOTI_BISECT_RUNNER", forking_runner().string()}}));
  REQUIRE(wait_for([&] { return processes_mentioning("aoti-bisect-grandchild") > 0; }, 60));
  int pid = driver_pid(out);
  REQUIRE(pid > 0);
  ::kill(pid, SIGKILL);
  set.wait_any();
  // The runner dies by its parent-death signal; its helper only by the group guard.
  CHECK(wait_for([&] { return processes_mentioning("aoti-bisect-forking-runner") == 0; }, 10));
  CHECK(wait_for([&] { return processes_mentioning("aoti-bisect-grandchild") == 0; }, 10));
  CHECK(has_entry(out, ".work-"));  // a SIGKILLed driver cannot clean up

  auto again = run_tool({"run", example("healthy.pt2").string(), "--inputs", example("healthy.inputs.pt").string(),
                         "--no-matrix", "--out", out.string()},
                        "");
  again.report = read_report(out);  // run_tool would empty a folder it is given
  CHECK(again.code() == 0);
  CHECK_FALSE(has_entry(out, ".work-"));
  auto notes = again.report["notes"].dump();
  CHECK(notes.find("removed the work folder of 1 earlier run") != std::string::npos);
  CHECK(notes.find(std::to_string(pid)) != std::string::npos);
}

TEST_CASE("one run per output folder: a second run refuses at once, naming the first; an earlier run moves aside") {
  fs::path out = fs::absolute("out-busy");
  fs::remove_all(out);
  aoti_bisect::ProcessSet set;
  set.start(tool_spec(healthy_args(out.string()), "busy", {{"AOTI_BISECT_RUNNER", sleeping_runner().string()}}));
  REQUIRE(wait_for([&] { return processes_mentioning("aoti-bisect-sleeping-runner") > 0; }, 60));
  int pid = driver_pid(out);
  REQUIRE(pid > 0);
  auto second = run_tool(healthy_args(out.string()), "");
  CHECK(second.code() == 2);
  CHECK(second.err.find("is in use by another aoti-bisect run (pid " + std::to_string(pid) + ")") != std::string::npos);
  CHECK(fs::exists(out / "runs" / "baseline"));  // the first run's files are untouched
  ::kill(pid, SIGTERM);
  auto [token, first] = set.wait_any();
  CHECK(first.exit_code == 130);

  // The folder is free again; the interrupted run's files move to previous/.
  auto third = run_tool(healthy_args(out.string()), "");
  third.report = read_report(out);
  CHECK(third.code() == 0);
  CHECK(third.report["verdict"] == "clean");
  CHECK(read_report(out / "previous")["verdict"] == "interrupted");
  CHECK(third.report["notes"].dump().find("moved to previous/") != std::string::npos);
  CHECK(aoti_bisect::read_file(out / "report.md", "report").find("moved to previous/") != std::string::npos);
}

TEST_CASE("a read-only or full output folder: one error line, its exit code, no temp file, no claim of reports") {
  fs::path ro = fs::absolute("ro-mount");
  if (!mount_tmpfs(ro, "ro,size=1m")) {
    aoti_bisect::test::skip("mounting a tmpfs needs root: the read-only and full output folder case");
    return;
  }
  auto r = run_tool(healthy_args((ro / "out").string()), "");
  auto r2 = run_tool(healthy_args(ro.string()), "");
  ::umount(ro.c_str());
  CHECK(r.code() == 2);
  CHECK(r.err.find("aoti-bisect: error: output folder") != std::string::npos);
  CHECK(r.err.find("Read-only file system") != std::string::npos);
  CHECK(r2.code() == 2);
  CHECK(r2.err.find("is not writable (Read-only file system)") != std::string::npos);

  fs::path full = fs::absolute("full-mount");
  REQUIRE(mount_tmpfs(full, "size=40k"));
  auto f = run_tool(healthy_args((full / "out").string()), "");
  std::vector<std::string> left;
  for (const auto& e : fs::recursive_directory_iterator(full)) {
    left.push_back(e.path().filename().string());
  }
  ::umount(full.c_str());
  CHECK(f.code() == 5);
  CHECK(f.err.find("aoti-bisect: error: the reports cannot be written") != std::string::npos);
  CHECK(f.err.find("No space left on device") != std::string::npos);
  CHECK(f.out.find("reports:") == std::string::npos);
  for (const auto& name : left) {
    CAPTURE(name);
    CHECK(name.find(".tmp.") == std::string::npos);
    CHECK(name.rfind("report", 0) != 0);  // no stale report with verdict `running`
    CHECK(name.rfind(".work-", 0) != 0);
  }
}

// A folder that fills after the baseline (issue 51): the job ends with its
// error line and exit 5, and the report it had begun is finalized as
// internal_error with that line, never left saying `running` (or, where even
// that cannot be written, removed, and the error line says so).
TEST_CASE("a read-only or full output folder that fills after the baseline: the report ends internal_error") {
  fs::path mount = fs::absolute("fills-mount");
  if (!mount_tmpfs(mount, "size=64m")) {
    aoti_bisect::test::skip("mounting a tmpfs needs root: the folder that fills after the baseline");
    return;
  }
  fs::path out = mount / "out";
  aoti_bisect::ProcessSet set;
  set.start(tool_spec({"run", example("nan_midway.pt2").string(), "--inputs", example("nan_midway.inputs.pt").string(),
                       "--out", out.string()},
                      "fills"));
  // Once the baseline has run and the report holds it, everything left is taken.
  bool baseline = wait_for(
      [&] { return fs::exists(out / "runs" / "baseline" / "outputs.pt") && fs::exists(out / "report.json"); }, 120);
  if (baseline) {
    int fd = ::open((mount / "filler").c_str(), O_CREAT | O_WRONLY, 0644);
    REQUIRE(fd >= 0);
    off_t end = 0;
    for (off_t chunk : {off_t{1} << 20, off_t{4096}}) {
      while (::posix_fallocate(fd, end, chunk) == 0) {
        end += chunk;
      }
    }
    ::close(fd);
    struct statvfs v {};
    REQUIRE(::statvfs(mount.c_str(), &v) == 0);
    CHECK(v.f_bavail == 0);
  }
  auto [token, st] = set.wait_any();
  (void)token;
  nlohmann::json report;
  if (fs::exists(out / "report.json")) {
    report = nlohmann::json::parse(e2e::read_text(out / "report.json"), nullptr, false);
  }
  std::string err = e2e::read_text("fills.stderr.txt");
  ::umount(mount.c_str());
  REQUIRE(baseline);
  CAPTURE(err);
  CHECK(st.exit_code == 5);
  CHECK(err.find("No space left on device") != std::string::npos);
  if (report.is_object()) {
    CHECK(report["verdict"] == "internal_error");
    CHECK(report["error"].get<std::string>().find("No space left on device") != std::string::npos);
    CHECK(report["runs"].size() >= 1);  // the baseline it had, kept
  } else {
    CHECK(err.find("the reports cannot be written") != std::string::npos);
  }
}

TEST_CASE("redaction follows what a path names: `..` and /proc/self/root spellings of the home folder") {
  // Outside the working folder, so that only the home folder can hide it.
  fs::path home = fs::temp_directory_path() / ("aoti-bisect-e2e-home-" + std::to_string(::getpid()));
  fs::create_directories(home / "models");
  fs::copy_file(example("nan_midway.pt2"), home / "models" / "m.pt2", fs::copy_options::overwrite_existing);
  fs::copy_file(example("nan_midway.inputs.pt"), home / "models" / "in.pt", fs::copy_options::overwrite_existing);
  std::string dotted = (home / ".." / home.filename() / "models" / "m.pt2").string();
  std::string proc = "/proc/self/root" + (home / "models" / "in.pt").string();
  auto r = run_tool({"run", dotted, "--inputs", proc, "--no-matrix", "--no-bisect"}, "out-redact",
                    {{"HOME", home.string()}});
  CHECK(r.code() == 3);
  for (const char* name : {"out-redact/report.json", "out-redact/report.md"}) {
    CAPTURE(name);
    std::string text = e2e::read_text(name);
    CHECK(text.find(home.string()) == std::string::npos);
    CHECK(text.find("..~") == std::string::npos);
    CHECK(text.find("~/models/m.pt2") != std::string::npos);
    CHECK(text.find("~/models/in.pt") != std::string::npos);
  }
  fs::remove_all(home);
}

TEST_CASE("--memory-limit bounds each child's address space") {
  auto tight = run_tool(with_limit("64M"), "out-mem");
  CHECK(tight.code() == 5);  // the runner cannot even map LibTorch: the tool's own failure, not the model's
  CHECK(tight.report["verdict"] == "internal_error");
  auto roomy = run_tool(with_limit("64G"), "out-mem2");
  CHECK(roomy.code() == 0);
  auto bad = run_tool(with_limit("lots"), "");
  CHECK(bad.code() == 2);
  CHECK(bad.err.find("--memory-limit: 'lots' is not a size") != std::string::npos);
}

TEST_SUITE_END();
