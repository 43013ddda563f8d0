// The package alone: `aoti-bisect run PKG --inputs IN`, with no exported
// program and no config, must name the same call site as the
// exported-program path (the generator's recorded culprit), through
// interposition (hooks compiled once, no rebuild of the model) and through
// the wrapper rewrite (the package's own wrapper recompiled with probes,
// trusted only when it returns the package's outputs). Packages a source
// cannot probe fall to the next one, which says why.

#include <elf.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include <doctest/doctest.h>

#include "archive/elf.hpp"
#include "common/files.hpp"
#include "e2e/e2e.hpp"

namespace fs = std::filesystem;
using e2e::example;
using e2e::meta_of;
using e2e::run_tool;
using e2e::warm_inductor;

namespace {

std::vector<std::string> package_only(const std::string& package, const std::string& name,
                                      std::vector<std::string> more = {}, const std::string& cache = "build-cache") {
  std::vector<std::string> args = {"run",       package, "--inputs",    example(name + ".inputs.pt").string(),
                                   "--repeats", "1",     "--cache-dir", fs::absolute(cache).string()};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

// Sets DT_SYMBOLIC in a shared object's dynamic section (what a link with
// -Bsymbolic records), in place of its DT_RELACOUNT hint.
bool mark_symbolic(std::string& so) {
  Elf64_Ehdr eh;
  std::memcpy(&eh, so.data(), sizeof eh);
  for (int i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph;
    std::memcpy(&ph, so.data() + eh.e_phoff + static_cast<size_t>(i) * eh.e_phentsize, sizeof ph);
    if (ph.p_type != PT_DYNAMIC) {
      continue;
    }
    for (size_t off = ph.p_offset; off + sizeof(Elf64_Dyn) <= ph.p_offset + ph.p_filesz; off += sizeof(Elf64_Dyn)) {
      Elf64_Dyn d;
      std::memcpy(&d, so.data() + off, sizeof d);
      if (d.d_tag == DT_RELACOUNT) {
        d.d_tag = DT_SYMBOLIC;
        d.d_un.d_val = 0;
        std::memcpy(so.data() + off, &d, sizeof d);
        return true;
      }
    }
  }
  return false;
}

}  // namespace

TEST_SUITE_BEGIN("e2e/interpose");

TEST_CASE("the package alone: every fault and NaN example isolated by interposition at the recorded call site") {
  for (std::string name :
       {"nan_midway", "deep_late_nan", "extern_overflow", "wild_gather", "class_index", "relu_runtime_error"}) {
    CAPTURE(name);
    auto meta = meta_of(name);
    auto r = run_tool(package_only(example(name + ".pt2").string(), name), "out-" + name);
    CHECK(r.code() == 1);
    REQUIRE(r.report.is_object());
    CHECK(r.report["verdict"] == "isolated");
    REQUIRE(r.report["culprit"].is_object());
    CHECK(r.report["culprit"]["call_index"] == meta["culprit"]["call_index"].get<int>() + 1);
    CHECK(r.report["culprit"]["kernel"] == meta["culprit"]["kernel"]);
    CHECK(r.report["bisection"]["source"] == "interpose");
    CHECK(r.report["bisection"]["sources_passed_over"].empty());
    // One hook library, no Inductor build; the first run bound it.
    REQUIRE(r.report["builds"]["items"].size() == 1);
    CHECK(r.report["runs"][0]["probe_plan"] != "none");
    CHECK(r.report["builds"]["items"][0]["source"] == "interpose");
    CHECK(r.report["builds"]["items"][0]["purpose"] == "hooks");
    CHECK(r.out.find("probes: interpose") != std::string::npos);
  }
}

TEST_CASE("interposition: the culprit's evidence shows what the printer never did, and the hooks come from the cache") {
  // extern_overflow: the addmm's constant bias and its reinterpreted weight
  // view are shown; the overflow is the extern call's, not the next kernel's.
  auto r = run_tool(package_only(example("extern_overflow.pt2").string(), "extern_overflow", {}, "hooks-cache"), "out");
  REQUIRE(r.report["culprit"].is_object());
  CHECK(r.report["culprit"]["kernel"] == "aoti_torch_cpu_addmm_out");
  std::string why = r.report["culprit"]["why"].get<std::string>();
  CHECK(why.find("Inf") != std::string::npos);
  std::string events = e2e::read_text("out/runs/baseline/events.jsonl");  // the first run bound the hooks
  CHECK(events.find("\"event\":\"hooks\"") != std::string::npos);
  auto again =
      run_tool(package_only(example("extern_overflow.pt2").string(), "extern_overflow", {}, "hooks-cache"), "out2");
  CHECK(again.code() == 1);
  CHECK(again.report["builds"]["items"][0]["cache_hit"] == true);
  CHECK(again.report["builds"]["count"] == 0);

  // The PLT calls objdump counted are kept beside the hooks, one file per
  // model library: doctored to none, the next job reads them and refuses
  // the hooks, as it would a library whose calls are direct.
  std::vector<fs::path> counts;
  for (const auto& e : fs::directory_iterator(fs::absolute("hooks-cache") / "plt-calls")) {
    counts.push_back(e.path());
  }
  REQUIRE(counts.size() == 1);
  const std::string counted = e2e::read_text(counts[0].string());
  const size_t addmm = counted.find("\naoti_torch_cpu_addmm_out ");
  REQUIRE(addmm != std::string::npos);  // the culprit's shim, called through the PLT
  CHECK(std::stoi(counted.substr(addmm + 26)) >= 1);
  std::string none;
  for (size_t line = 0; line < counted.size();) {
    size_t end = counted.find('\n', line);
    none += counted.substr(line, counted.find(' ', line) - line) + " 0\n";
    line = end + 1;
  }
  aoti_bisect::write_file_atomic(counts[0], none);
  auto doctored = run_tool(package_only(example("extern_overflow.pt2").string(), "extern_overflow",
                                        {"--source", "interpose"}, "hooks-cache"),
                           "out3");
  CHECK(doctored.code() == 3);
  CHECK(doctored.report["verdict_reason"].get<std::string>().find("PLT calls to") != std::string::npos);
}

TEST_CASE("wrong values without the package's Inductor config: the package's probes, the exported program's nodes") {
  // relu_accuracy was built with a config that breaks relu; the exported
  // program built without it computes correct values, so its own probes
  // cannot show the bug. Interposition probes the package's own code and
  // takes only the buffers' graph nodes from that build.
  auto meta = meta_of("relu_accuracy");
  std::vector<std::string> more = {"--reference", example("relu_accuracy.expected.pt").string(), "--no-judge",
      "--exported-program",
                                   example("relu_accuracy.ep.pt2").string()};
  auto r = run_tool(package_only(example("relu_accuracy.pt2").string(), "relu_accuracy", more), "out", warm_inductor());
  CHECK(r.code() == 1);
  CHECK(r.report["failure"]["kind"] == "mismatch");
  CHECK(r.report["bisection"]["source"] == "interpose");
  REQUIRE(r.report["culprit"].is_object());
  CHECK(r.report["culprit"]["call_index"] == meta["culprit"]["call_index"].get<int>() + 1);
  CHECK(r.report["culprit"]["kernel"] == meta["culprit"]["kernel"]);
  CHECK(r.report["builds"]["call_sites_match"] == true);

  more.insert(more.end(), {"--source", "exported_program"});
  auto ep =
      run_tool(package_only(example("relu_accuracy.pt2").string(), "relu_accuracy", more), "out2", warm_inductor());
  CHECK(ep.code() == 3);
  CHECK(ep.report["verdict"] == "suppressed_by_instrumentation");
}

TEST_CASE("the wrapper rewrite: fault and NaN examples isolated at the recorded call site, outputs checked") {
  for (std::string name : {"nan_midway", "extern_overflow", "wild_gather"}) {
    CAPTURE(name);
    auto meta = meta_of(name);
    auto r = run_tool(package_only(example(name + ".pt2").string(), name, {"--source", "rewrite"}), "out-" + name);
    CHECK(r.code() == 1);
    REQUIRE(r.report["culprit"].is_object());
    CHECK(r.report["culprit"]["call_index"] == meta["culprit"]["call_index"].get<int>() + 1);
    CHECK(r.report["culprit"]["kernel"] == meta["culprit"]["kernel"]);
    CHECK(r.report["bisection"]["source"] == "rewrite");
    REQUIRE(r.report["builds"]["items"].size() == 1);
    CHECK(r.report["builds"]["items"][0]["source"] == "rewrite");
    std::string fidelity = r.report["builds"]["items"][0]["fidelity"];
    // A crash returns no outputs to compare; NaN outputs compare bit for bit.
    CHECK(fidelity == (name == "wild_gather" ? "outputs not compared (the runs returned none)"
                                             : "outputs bit-identical to the package's first run (checksums)"));
  }
}

TEST_CASE("the rewrite's fidelity guard: a rebuilt library with one weight byte changed is not trusted") {
  std::vector<std::string> more = {"--reference",        example("relu_accuracy.expected.pt").string(),
                                   "--no-judge", "--exported-program", example("relu_accuracy.ep.pt2").string(),
                                   "--source",           "rewrite"};
  auto meta = meta_of("relu_accuracy");
  int culprit = meta["culprit"]["call_index"].get<int>() + 1;
  auto r = run_tool(package_only(example("relu_accuracy.pt2").string(), "relu_accuracy", more, "fidelity-cache"), "out",
                    warm_inductor());
  CHECK(r.code() == 1);
  CHECK(r.report["bisection"]["source"] == "rewrite");
  REQUIRE(r.report["culprit"].is_object());
  CHECK(r.report["culprit"]["call_index"] == culprit);
  // The builds of the rewrite source (the exported program's build, for the
  // map from buffers to graph nodes, comes first).
  auto rewrites = [](const nlohmann::json& report) {
    std::vector<nlohmann::json> out;
    for (const auto& item : report["builds"]["items"]) {
      if (item["source"] == "rewrite") {
        out.push_back(item);
      }
    }
    return out;
  };
  REQUIRE(rewrites(r.report).size() == 1);
  CHECK(rewrites(r.report)[0]["fidelity"] == "outputs bit-identical to the package's first run (checksums)");
  fs::path cache = fs::absolute("fidelity-cache") / "rewrite";
  // Flips the exponent byte of the first weight in `file`, found by the
  // blob's first bytes as the package's library holds them.
  fs::path package_so;
  {
    fs::path x = fs::absolute("extracted");
    e2e::rewrite_package(example("relu_accuracy.pt2"), fs::absolute("copy.pt2"),
                         [&](const std::string& name, std::string& bytes) {
                           if (name.ends_with(".so")) {
                             fs::create_directories(x);
                             package_so = x / "model.so";
                             std::ofstream(package_so, std::ios::binary) << bytes;
                           }
                           return true;
                         });
  }
  REQUIRE(!package_so.empty());
  auto facts = aoti_bisect::read_elf_facts(package_so);
  std::string so_bytes = e2e::read_text(package_so);
  std::string head = so_bytes.substr(facts.blobs.at("_binary_constants_bin_start").file_offset, 64);
  auto flip = [&](const fs::path& file) {
    std::string bytes = e2e::read_text(file);
    size_t at = bytes.find(head);
    if (at == std::string::npos) {
      return false;
    }
    bytes[at + 3] = static_cast<char>(bytes[at + 3] ^ 0x20);
    std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;
    return true;
  };
  // 1. The cached rebuild (its wrapper at -O0) tampered: the guard refuses
  //    it, and the wrapper is rebuilt with its recorded flags, which is trusted.
  int tampered = 0;
  for (const auto& e : fs::recursive_directory_iterator(cache)) {
    tampered += e.path().extension() == ".so" && flip(e.path());
  }
  REQUIRE(tampered == 1);
  auto t = run_tool(package_only(example("relu_accuracy.pt2").string(), "relu_accuracy", more, "fidelity-cache"),
                    "out2", warm_inductor());
  CHECK(t.code() == 1);
  REQUIRE(t.report["culprit"].is_object());
  CHECK(t.report["culprit"]["call_index"] == culprit);
  auto items = rewrites(t.report);
  REQUIRE(items.size() == 2);
  CHECK(items[0]["fidelity"] == "outputs differ from the package's: not trusted");
  CHECK(items[1]["fidelity"] == "outputs bit-identical to the package's first run (checksums)");
  // 2. The weights object both rebuilds link tampered: neither is trusted.
  int objects = 0;
  for (const auto& e : fs::directory_iterator(cache / "objects")) {
    objects += e.path().filename().string().rfind("weights-", 0) == 0 && flip(e.path());
  }
  REQUIRE(objects == 1);
  for (const auto& e : fs::directory_iterator(cache)) {
    if (e.path().filename() != "objects") {
      fs::remove_all(e.path());
    }
  }
  auto u = run_tool(package_only(example("relu_accuracy.pt2").string(), "relu_accuracy", more, "fidelity-cache"),
                    "out3", warm_inductor());
  CHECK(u.code() == 3);
  CHECK(u.report["verdict"] == "not_isolated");
  CHECK(u.report["culprit"].is_null());
  CHECK(u.report["verdict_reason"].get<std::string>().find("rewrite: the rebuilt library's outputs differ from the "
                                                           "package's") != std::string::npos);
  auto both = rewrites(u.report);
  REQUIRE(both.size() == 2);
  for (const auto& item : both) {
    CHECK(item["fidelity"] == "outputs differ from the package's: not trusted");
  }
}

TEST_CASE("a model library that binds its own symbols (DT_SYMBOLIC): interposition says why; the rewrite takes over") {
  fs::path pkg = fs::absolute("nan_midway_symbolic.pt2");
  bool marked = false;
  e2e::rewrite_package(example("nan_midway.pt2"), pkg, [&](const std::string& name, std::string& bytes) {
    if (name.ends_with(".so")) {
      marked = mark_symbolic(bytes);
    }
    return true;
  });
  REQUIRE(marked);
  auto forced = run_tool(package_only(pkg.string(), "nan_midway", {"--source", "interpose"}), "out");
  CHECK(forced.code() == 3);
  CHECK(forced.report["verdict"] == "not_isolated");
  CHECK(forced.report["verdict_reason"].get<std::string>().find("DT_SYMBOLIC") != std::string::npos);

  auto meta = meta_of("nan_midway");
  auto fallback = run_tool(package_only(pkg.string(), "nan_midway"), "out2");
  CHECK(fallback.code() == 1);
  CHECK(fallback.report["bisection"]["source"] == "rewrite");
  REQUIRE(fallback.report["bisection"]["sources_passed_over"].size() == 1);
  CHECK(fallback.report["bisection"]["sources_passed_over"][0]["source"] == "interpose");
  CHECK(fallback.report["bisection"]["sources_passed_over"][0]["why"].get<std::string>().find("DT_SYMBOLIC") !=
        std::string::npos);
  CHECK(fallback.report["culprit"]["call_index"] == meta["culprit"]["call_index"].get<int>() + 1);
  CHECK(fallback.report["builds"]["items"][0]["passed_over"][0]["source"] == "interpose");
}

TEST_CASE("a package without its wrapper.cpp: both package-level sources say why; the exported program takes over") {
  fs::path pkg = fs::absolute("nan_midway_no_wrapper.pt2");
  e2e::rewrite_package(example("nan_midway.pt2"), pkg,
                       [](const std::string& name, std::string&) { return !name.ends_with(".wrapper.cpp"); });
  auto r = run_tool(package_only(pkg.string(), "nan_midway"), "out");
  CHECK(r.code() == 3);
  CHECK(r.report["verdict"] == "not_isolated");
  std::string reason = r.report["verdict_reason"].get<std::string>();
  CHECK(reason.find("nonfinite reproduced") != std::string::npos);
  CHECK(reason.find("interpose: the package has no wrapper source") != std::string::npos);
  CHECK(reason.find("rewrite: the package has no wrapper source") != std::string::npos);
  CHECK(reason.find("--exported-program") != std::string::npos);

  auto meta = meta_of("nan_midway");
  auto ep =
      run_tool(package_only(pkg.string(), "nan_midway", {"--no-judge",
          "--exported-program", example("nan_midway.ep.pt2").string()}),
               "out2", warm_inductor());
  CHECK(ep.code() == 1);
  CHECK(ep.report["bisection"]["source"] == "exported_program");
  CHECK(ep.report["bisection"]["sources_passed_over"].size() == 2);
  CHECK(ep.report["culprit"]["call_index"] == meta["culprit"]["call_index"].get<int>() + 1);
}

TEST_CASE("torch.cond: NaN made inside the taken branch, either one, is isolated from the package alone") {
  // Call sites are numbered by occurrence in the run: the untaken branch's
  // two call sites do not count. Which branch the wrapper writes first
  // depends on the torch version (2.13: true; 2.15: false): the example's
  // run_index says where the culprit runs.
  for (std::string name : {"cond_nan_true", "cond_nan_false"}) {
    auto meta = meta_of(name);
    const bool false_taken = name == "cond_nan_false";
    for (std::string source : {"interpose", "rewrite"}) {
      CAPTURE(name);
      CAPTURE(source);
      auto r = run_tool(package_only(example(name + ".pt2").string(), name, {"--source", source}), "out");
      CHECK(r.code() == 1);
      REQUIRE(r.report["culprit"].is_object());
      CHECK(r.report["culprit"]["kernel"] == meta["culprit"]["kernel"]);
      CHECK(r.report["culprit"]["call_index"] == meta["culprit"]["run_index"].get<int>() + 1);
      CHECK(r.report["culprit"]["branch"] == (false_taken ? "false_graph_0" : "true_graph_0"));
      CHECK(r.report["bisection"]["source"] == source);
      // Both branches begin with an addmm: the one that ran is placed in
      // the branch that ran, never in the other.
      int in_taken = 0;
      for (const auto& site : r.report["bisection"]["sites"]) {
        CAPTURE(site.dump());
        CHECK(site.value("branch", "") != (false_taken ? "true_graph_0" : "false_graph_0"));
        in_taken += site.value("branch", "") == (false_taken ? "false_graph_0" : "true_graph_0");
      }
      CHECK(in_taken == 2);
    }
  }
}

TEST_CASE("torch.cond through the exported program: the printer's blind spots are filled, the branch's kernel named") {
  // The printer puts no probes inside the branches; the instrumented
  // build's wrapper gets them there and is recompiled, so the search sees
  // the branch's kernels instead of stopping at the blind spot.
  for (std::string name : {"cond_nan_true", "cond_nan_false", "cond_fault"}) {
    CAPTURE(name);
    auto meta = meta_of(name);
    auto r = run_tool(
        package_only(example(name + ".pt2").string(), name,
                     {"--no-judge",
                         "--exported-program", example(name + ".ep.pt2").string(), "--source", "exported_program"}),
        "out-" + name, warm_inductor());
    CHECK(r.code() == 1);
    CHECK(r.report["bisection"]["source"] == "exported_program");
    CHECK(r.report["bisection"]["status"] == "found");
    REQUIRE(r.report["culprit"].is_object());
    CHECK(r.report["culprit"]["kernel"] == meta["culprit"]["kernel"]);
    CHECK(r.report["culprit"]["call_index"] == meta["culprit"]["run_index"].get<int>() + 1);
    CHECK(r.report["culprit"]["branch"] == (name == "cond_nan_false" ? "false_graph_0" : "true_graph_0"));
    const auto& items = r.report["builds"]["items"];
    REQUIRE(items.size() == 2);
    CHECK(items[1]["purpose"] == "instrumented, probes inside control flow");
    CHECK(items[1]["fidelity"].get<std::string>().find("call sites it left out") != std::string::npos);
  }
}

TEST_CASE("a truncated model library: one line and exit 4, with a report") {
  fs::path pkg = fs::absolute("nan_midway_truncated_so.pt2");
  e2e::rewrite_package(example("nan_midway.pt2"), pkg, [](const std::string& name, std::string& bytes) {
    if (name.ends_with(".so")) {
      bytes.resize(4096);
    }
    return true;
  });
  auto r = run_tool(package_only(pkg.string(), "nan_midway"), "out");
  CHECK(r.code() == 4);
  CHECK(r.report["verdict"] == "could_not_test");
  // One error line, naming the library and what to do (progress lines aside).
  std::string err = r.err;
  size_t at = err.find("aoti-bisect: error: the model library '");
  REQUIRE(at != std::string::npos);
  CHECK(err.find("aoti-bisect: error:", at + 1) == std::string::npos);
  std::string line = err.substr(at, err.find('\n', at) - at);
  CHECK(line.find("is truncated") != std::string::npos);
  CHECK(line.find("rebuild the package") != std::string::npos);
  CHECK(err.find('\n', at) == err.size() - 1);
}

TEST_SUITE_END();

TEST_SUITE_BEGIN("e2e/interpose");

TEST_CASE("a row written past a buffer's end: the guard-page variant turns the late crash into a fault in the kernel") {
  auto meta = meta_of("index_put_past_end");
  auto r = run_tool(package_only(example("index_put_past_end.pt2").string(), "index_put_past_end"), "out-oob");
  CHECK(r.code() == 1);
  REQUIRE(r.report["culprit"].is_object());
  CHECK(r.report["verdict"] == "isolated");
  CHECK(r.report["culprit"]["call_index"] == meta["culprit"]["call_index"].get<int>() + 1);
  CHECK(r.report["culprit"]["kernel"] == meta["culprit"]["kernel"]);
  CHECK(r.report["culprit"]["phase"] == "launch");
  // Without guard pages the heap corruption shows wherever glibc next
  // looks (SIGABRT or SIGSEGV, depending on the heap's layout); with them,
  // inside the kernel, and the search ran with them.
  CHECK(r.report["matrix"]["chosen"] == "guard_pages");
  bool guard_faulted = false;
  for (const auto& run : r.report["runs"]) {
    if (run["variant"] == "guard_pages") {
      guard_faulted = run["signal_name"] == "SIGSEGV";
    }
  }
  CHECK(guard_faulted);

  // Without the variant the search places it only when the corruption
  // happens to show during the kernel: then at the right site, otherwise not
  // isolated with the memory-corruption hint (the crash past the last site,
  // or at a site that moved between runs). Never a wrong kernel.
  std::ofstream("no-guard.yaml") << "variants_mode: replace\nvariants:\n  - name: repeat\n";
  auto plain = run_tool(
      package_only(example("index_put_past_end.pt2").string(), "index_put_past_end", {"--config", "no-guard.yaml"}),
      "out-oob2");
  if (plain.code() == 1) {
    CHECK(plain.report["culprit"]["call_index"] == meta["culprit"]["call_index"].get<int>() + 1);
    CHECK(plain.report["culprit"]["kernel"] == meta["culprit"]["kernel"]);
  } else {
    CHECK(plain.code() == 3);
    CHECK(plain.report["culprit"].is_null());
    CHECK(plain.report["verdict_reason"].get<std::string>().find("likely memory corruption") != std::string::npos);
  }

  // A failure that is not a crash never runs the variant.
  auto nan = run_tool(package_only(example("nan_midway.pt2").string(), "nan_midway", {"--no-bisect"}), "out-nan");
  for (const auto& run : nan.report["runs"]) {
    CHECK(run["variant"] != "guard_pages");
  }
}

TEST_SUITE_END();
