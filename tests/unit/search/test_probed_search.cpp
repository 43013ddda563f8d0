// The probed model's searches (search/probed_search.hpp) on the fake
// children the job's tests use (tests/unit/job/fake_children.hpp), without
// the job around them: which search a predicate gets, the culprit it names,
// and every run it makes through the one request maker (search_request):
// ids bisect.N.purpose, group "search", the failure's variant and
// environment.

#include <filesystem>
#include <set>

#include <doctest/doctest.h>

#include "harness/runs.hpp"
#include "job/fake_children.hpp"
#include "package_fixture.hpp"
#include "search/probed_search.hpp"

using namespace aoti_bisect;
namespace fs = std::filesystem;

namespace {

// A package, its model and a search's setup for the fake model's NaN at
// site `bad` of 9, under a variant with one variable.
struct SearchBench {
  fake::SilentProgress progress;
  std::optional<Package> pkg;
  const ModelFiles* model = nullptr;
  WrapperInfo wrapper;
  Settings settings;
  std::optional<Recorder> rec;
  std::vector<ChildRequest> log;
  fake::FakeModel fake;

  SearchBench() {
    fixture::make_package("model.pt2", "pkg/", "cpu");
    pkg = Package::open("model.pt2");
    model = &pkg->select_model("");
    wrapper = pkg->wrapper_info(*model);
    settings.out_dir = "out";
    rec.emplace("out", false, progress);
    rec->start({"aoti-bisect", "run"}, "inputs.pt", "");
  }

  ProbedModel probed() const {
    ProbedModel m;
    m.model.dir = fs::absolute("package");
    for (int k = 1; k <= fake.sites; ++k) {
      m.wrapper.call_sites.push_back(CallSite{k, "k" + std::to_string(k), KernelKind::cpp, 0, "", {}, true});
    }
    m.wrapper.printer_level = 1;
    return m;
  }

  BisectOutcome search(Predicate pred, Bisection& bis) {
    fake::FakeChildren children([this](const ChildRequest& r) { return fake.answer(r); }, log);
    Runs runs(children, *rec);
    JobContext job{settings, *rec, runs, "cpu", fs::current_path()};
    BisectSetup setup{.pkg = *pkg,
                      .model = *model,
                      .wrapper = wrapper,
                      .env = {{"OMP_NUM_THREADS", "1"}},
                      .variant = "one_thread",
                      .kind = OutcomeKind::nonfinite,
                      .first_line = "non-finite outputs from finite inputs",
                      .deterministic = true};
    return search_probed_model(job, setup, pred, bis, probed());
  }
};

}  // namespace

TEST_CASE("the step search on fake children names the site that made NaN, every run made by one request maker") {
  SearchBench b;
  b.fake.bad = 5;
  Bisection bis;
  BisectOutcome out = b.search(Predicate::nonfinite, bis);
  CHECK(out.verdict == Verdict::isolated);
  REQUIRE(b.rec->report().culprit.has_value());
  CHECK(b.rec->report().culprit->call_index == 5);
  CHECK(b.rec->report().culprit->kernel == "k5");
  // The trace run answers the first question; the evidence run confirms it.
  REQUIRE(b.log.size() == 2);
  CHECK(b.log[0].id == "bisect.1.trace");
  CHECK(b.log[1].id == "bisect.2.evidence");
  CHECK(b.log[1].fresh);
  std::set<std::string> ids;
  for (const auto& r : b.log) {
    CAPTURE(r.id);
    CHECK(r.group == "search");
    CHECK(r.variant == "one_thread");
    CHECK(r.env.at("OMP_NUM_THREADS") == "1");
    CHECK(r.probe_plan.has_value());
    ids.insert(r.id);
  }
  CHECK(ids.size() == b.log.size());
}

TEST_CASE("the step search on fake children: a failure the probes hide is said to be hidden, no culprit") {
  SearchBench b;
  b.fake.bad = 3;
  b.fake.bad_after_probes = false;
  Bisection bis;
  BisectOutcome out = b.search(Predicate::nonfinite, bis);
  CHECK(out.verdict == Verdict::suppressed_by_instrumentation);
  CHECK(bis.message == "the failure did not reproduce in the instrumented build");
  CHECK_FALSE(b.rec->report().culprit.has_value());
  REQUIRE_FALSE(b.log.empty());
  CHECK(b.log[0].id == "bisect.1.trace");
}
