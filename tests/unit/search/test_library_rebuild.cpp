#include <string>

#include <doctest/doctest.h>

#include "common/error.hpp"
#include "search/library_rebuild.hpp"

using namespace aoti_bisect;

namespace {

std::string wrapper_with_link(const std::string& objects) {
  return "void f() {}\n// Compile cmd\n// g++ /tmp/a/c.wrapper.cpp -D USE_CUDA -O1 -fPIC -c -o /tmp/a/c.wrapper.o\n"
         "// Link cmd\n// g++ " +
         objects + " -shared -fPIC -o /tmp/a/c.so -lcuda\n";
}

// The message rebuild_library refuses with, before it compiles anything.
std::string refusal(const LibrarySources& src) {
  try {
    rebuild_library(src, "/nonexistent-cache", 10);
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::cannot_test);
    return e.what();
  }
  return "";
}

}  // namespace

TEST_SUITE_BEGIN("search/library_rebuild");

TEST_CASE("rebuild_library: an object the package does not hold is named, with why (CUDA embed_kernel_binary)") {
  std::string kernel = "// Compile cmd\n// g++ /tmp/a/k.kernel.cpp -O3 -fPIC -c -o /tmp/a/k.kernel.o\n";
  LibrarySources embedded{"",
                          wrapper_with_link("/tmp/a/c.wrapper.o /tmp/a/k.kernel.o /tmp/a/w.weights.o "
                                            "/tmp/a/cubins_combined.o"),
                          kernel, "/nonexistent/c.so"};
  embedded.wrapper = embedded.recorded_wrapper;
  std::string why = refusal(embedded);
  CHECK(why.find("cubins_combined.o, an object the package does not hold") != std::string::npos);
  CHECK(why.find("embed_kernel_binary") != std::string::npos);

  // No kernel source: nothing to make the kernel object the link names from.
  LibrarySources no_kernel{"", wrapper_with_link("/tmp/a/c.wrapper.o /tmp/a/k.kernel.o /tmp/a/w.weights.o"), "",
                           "/nonexistent/c.so"};
  no_kernel.wrapper = no_kernel.recorded_wrapper;
  CHECK(refusal(no_kernel).find("holds no kernel source") != std::string::npos);

  // No kernel source and no kernel object to link: the objects are fine; it
  // goes on to the library (missing here).
  LibrarySources wrapper_only{"", wrapper_with_link("/tmp/a/c.wrapper.o /tmp/a/w.weights.o"), "", "/nonexistent/c.so"};
  wrapper_only.wrapper = wrapper_only.recorded_wrapper;
  std::string later = refusal(wrapper_only);
  CHECK(later.find("object") == std::string::npos);
  CHECK(later.find("the model library 'c.so' cannot be read") != std::string::npos);
}

TEST_SUITE_END();
