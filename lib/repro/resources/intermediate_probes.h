// Probes for the intermediates of one Inductor cpp kernel (aoti-bisect,
// lib/repro/intermediates.hpp). kernel.traced.cpp is the kernel with a call
// to aoti_trace::probe after every statement that assigns an intermediate
// (`auto tmp7 = tmp6.log();`, `tmp_acc0 = tmp_acc0 + tmp3;`), given the value,
// the intermediates the statement reads, the loop variables in scope and,
// where the kernel stores what follows from it in the same loop body, the
// address it stores to. Each probe records, per statement, how many
// elements turned NaN while nothing the statement reads was NaN there (and
// likewise Inf from finite operands), and the first such element in loop
// order. aoti_trace_report prints them: one line for people, one
// `AOTI_TRACE {json}` line for aoti-bisect.
//
// Included after cpp_prefix.h (at::vec). NaN and Inf are told from the
// bits, whatever the kernel's math flags.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>

namespace aoti_trace {

constexpr int k_max_lanes = 256;
constexpr int k_max_loops = 12;
constexpr int k_max_operands = 12;

// The loop variables in scope, outermost first, and for a vector: how many
// of its lanes are elements (the tail of a loop holds fewer); -1: all.
struct Loop {
  int n = 0;
  int64_t v[k_max_loops] = {};
  int64_t valid = -1;
};
inline Loop loop() { return Loop{}; }
template <class... V>
Loop loop(int64_t valid, V... vars) {
  Loop l;
  int64_t values[] = {static_cast<int64_t>(vars)...};
  l.n = static_cast<int>(sizeof...(vars)) < k_max_loops ? static_cast<int>(sizeof...(vars)) : k_max_loops;
  for (int i = 0; i < l.n; ++i) {
    l.v[i] = values[i];
  }
  l.valid = valid;
  return l;
}

// Where the value's lane 0 is stored, and the size of one element; null when
// the kernel stores nothing of it in the same loop body.
struct Store {
  const void* address = nullptr;
  int element_size = 0;
  bool per_lane = false;  // a vector store: lane i at address + i elements
};
template <class P>
Store store(const P* address, bool per_lane) {
  return Store{static_cast<const void*>(address), static_cast<int>(sizeof(P)), per_lane};
}
inline Store no_store() { return Store{}; }

// A value's lanes as doubles; n < 0 when its type is not a number or vector
// of numbers (a lambda, a tuple): unknown. A mask has no lanes that can be
// NaN (n = 0).
struct Lanes {
  int n = -1;
  double v[k_max_lanes];
};

template <class T, class = void>
struct is_vector : std::false_type {};
template <class T>
struct is_vector<T, std::void_t<typename T::value_type, decltype(T::size()),
                                decltype(std::declval<const T&>().store(static_cast<void*>(nullptr)))>>
    : std::true_type {};

template <class T>
struct is_mask : std::false_type {};
#ifdef INDUCTOR_USE_VECTOR_TYPES  // a kernel built without vectors (cpp.simdlen=0) has no at::vec
#if INDUCTOR_USE_VECTOR_TYPES()
template <class T, int N>
struct is_mask<at::vec::VecMask<T, N>> : std::true_type {};
#endif
#endif

template <class T, class = void>
struct is_welford : std::false_type {};
template <class T>
struct is_welford<T, std::void_t<decltype(std::declval<const T&>().mean), decltype(std::declval<const T&>().m2),
                                 decltype(std::declval<const T&>().weight)>> : std::true_type {};

template <class T>
void append(const T& x, Lanes& out) {
  if (out.n < 0) {
    return;
  }
  if constexpr (is_mask<T>::value) {
    return;
  } else if constexpr (std::is_arithmetic_v<T>) {
    if (out.n < k_max_lanes) {
      out.v[out.n++] = static_cast<double>(x);
    }
  } else if constexpr (std::is_same_v<T, c10::Half> || std::is_same_v<T, c10::BFloat16>) {
    if (out.n < k_max_lanes) {
      out.v[out.n++] = static_cast<double>(static_cast<float>(x));
    }
  } else if constexpr (is_vector<T>::value) {
    using V = typename T::value_type;
    constexpr int size = static_cast<int>(T::size());
    if constexpr (std::is_arithmetic_v<V> || std::is_same_v<V, c10::Half> || std::is_same_v<V, c10::BFloat16>) {
      alignas(64) V buffer[size > 0 ? size : 1];
      x.store(static_cast<void*>(buffer));
      for (int i = 0; i < size && out.n < k_max_lanes; ++i) {
        out.v[out.n++] = static_cast<double>(static_cast<float>(buffer[i]));
      }
    } else {
      out.n = -1;
    }
  } else if constexpr (is_welford<T>::value) {
    append(x.mean, out);
    append(x.m2, out);
  } else {
    out.n = -1;
  }
}
template <class T>
Lanes lanes(const T& x) {
  Lanes l;
  l.n = 0;
  append(x, l);
  return l;
}

inline uint64_t bits(double x) {
  uint64_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}
inline bool is_nan(double x) { return (bits(x) & 0x7ff0000000000000ull) == 0x7ff0000000000000ull && (bits(x) << 12) != 0; }
inline bool is_inf(double x) { return (bits(x) & 0x7fffffffffffffffull) == 0x7ff0000000000000ull; }

// What one statement introduced: kind 0 NaN (from operands none of which is
// NaN there), kind 1 Inf (from finite operands).
struct Hit {
  std::atomic<int64_t> count{0};
  bool set = false;
  Loop loop;
  int lane = 0;
  int lanes = 1;
  double value = 0;
  int operands = 0;
  double operand[k_max_operands] = {};
  Store stored;
};

// Filled in by the generated kernel.traced.cpp.
struct Statement {
  const char* target;      // "tmp7"
  const char* text;        // "tmp7 = tmp6.log()"
  const char* operands;    // "tmp6" (comma-separated, as passed)
  const char* loops;       // "x0,x1"
  int vector_loop;         // the loop variable a vector's lanes run along (its position in `loops`), -1 none
};
extern const Statement k_statements[];
extern const int k_statement_count;
extern Hit g_hits[][2];

inline std::mutex& hit_mutex() {
  static std::mutex m;
  return m;
}

// Loop order: the first element is the one with the smallest loop variables.
inline bool earlier(const Loop& a, int lane_a, const Loop& b, int lane_b) {
  for (int i = 0; i < a.n && i < b.n; ++i) {
    if (a.v[i] != b.v[i]) {
      return a.v[i] < b.v[i];
    }
  }
  return lane_a < lane_b;
}

// The operand's value at `lane`: its own lane for a vector as wide as the
// value, its one lane for a scalar. An operand of another width is bad
// there when any of its elements is (`valid` of them).
inline bool operand_bad(const Lanes& o, int lane, int width, int64_t valid, int kind, double& shown) {
  auto bad = [&](double y) { return kind == 0 ? is_nan(y) : (is_nan(y) || is_inf(y)); };
  if (o.n == width) {
    shown = o.v[lane];
    return bad(shown);
  }
  if (o.n == 1) {
    shown = o.v[0];
    return bad(shown);
  }
  int limit = valid >= 0 && valid < o.n ? static_cast<int>(valid) : o.n;
  shown = limit > 0 ? o.v[0] : 0;
  for (int i = 0; i < limit; ++i) {
    if (bad(o.v[i])) {
      shown = o.v[i];
      return true;
    }
  }
  return false;
}

template <class T, class... Ops>
void probe(int id, const Loop& at, Store stored, const T& value, const Ops&... ops) {
  Lanes v = lanes(value);
  if (v.n <= 0 || id < 0 || id >= k_statement_count) {
    return;
  }
  int limit = v.n;
  if (v.n > 1 && at.valid >= 0 && at.valid < limit) {
    limit = static_cast<int>(at.valid);
  }
  bool any = false;
  for (int lane = 0; lane < limit && !any; ++lane) {
    any = is_nan(v.v[lane]) || is_inf(v.v[lane]);
  }
  if (!any) {
    return;
  }
  const Lanes operand_lanes[] = {lanes(ops)..., Lanes{}};
  constexpr int n_ops = static_cast<int>(sizeof...(Ops));
  for (int lane = 0; lane < limit; ++lane) {
    double x = v.v[lane];
    int kind = is_nan(x) ? 0 : is_inf(x) ? 1 : -1;
    if (kind < 0) {
      continue;
    }
    bool introduced = true;
    double shown[k_max_operands] = {};
    for (int k = 0; k < n_ops && introduced; ++k) {
      const Lanes& o = operand_lanes[k];
      if (o.n < 0) {
        introduced = false;  // an operand of unknown type: cannot tell
      } else if (operand_bad(o, lane, v.n, at.valid, kind, shown[k < k_max_operands ? k : 0])) {
        introduced = false;
      }
    }
    if (!introduced) {
      continue;
    }
    Hit& h = g_hits[id][kind];
    h.count.fetch_add(1, std::memory_order_relaxed);
    std::lock_guard<std::mutex> lock(hit_mutex());
    if (!h.set || earlier(at, lane, h.loop, h.lane)) {
      h.set = true;
      h.loop = at;
      h.lane = lane;
      h.lanes = v.n;
      h.value = x;
      h.operands = n_ops < k_max_operands ? n_ops : k_max_operands;
      for (int k = 0; k < h.operands; ++k) {
        h.operand[k] = shown[k];
      }
      h.stored = stored;
    }
  }
}

inline std::string number(double x) {
  if (is_nan(x)) {
    return "nan";
  }
  if (is_inf(x)) {
    return x > 0 ? "inf" : "-inf";
  }
  char b[64];
  std::snprintf(b, sizeof b, "%.9g", x);
  return b;
}

inline std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", c);
      out += b;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// "tmp6" from "tmp6,tmp3" by position.
inline std::string field(const char* list, int k) {
  std::string s = list;
  size_t start = 0;
  for (int i = 0; i < k; ++i) {
    start = s.find(',', start);
    if (start == std::string::npos) {
      return "";
    }
    ++start;
  }
  return s.substr(start, s.find(',', start) - start);
}

}  // namespace aoti_trace

extern "C" void aoti_trace_report(int (*resolve)(const void* address, int element_size, char* out, int capacity)) {
  using namespace aoti_trace;
  for (int kind = 0; kind < 2; ++kind) {
    for (int id = 0; id < k_statement_count; ++id) {
      Hit& h = g_hits[id][kind];
      if (!h.set) {
        continue;
      }
      const Statement& s = k_statements[id];
      // The element: the loop variables, a vector's lane added to the one its lanes run along.
      std::string element = "[", people;
      for (int i = 0; i < h.loop.n; ++i) {
        int64_t x = h.loop.v[i] + (i == s.vector_loop ? h.lane : 0);
        std::string name = field(s.loops, i);
        element += (i ? ", [" : "[") + json_string(name) + ", " + std::to_string(x) + "]";
        people += (i ? ", " : "") + name + "=" + std::to_string(x);
      }
      element += "]";
      std::string operands = "[", said;
      for (int k = 0; k < h.operands; ++k) {
        std::string name = field(s.operands, k);
        operands += (k ? ", " : "") + std::string("[") + json_string(name) + ", " + json_string(number(h.operand[k])) + "]";
        said += (k ? ", " : "") + name + " = " + number(h.operand[k]);
      }
      operands += "]";
      std::string output = "null";
      if (h.stored.address != nullptr && resolve != nullptr) {
        char buffer[512];
        const char* address = static_cast<const char*>(h.stored.address) +
                              static_cast<int64_t>(h.stored.per_lane ? h.lane : 0) * h.stored.element_size;
        if (resolve(address, h.stored.element_size, buffer, sizeof buffer) > 0) {
          output = buffer;
        }
      }
      std::printf("intermediate: %s = %s at %s (lane %d)%s%s; %lld element%s\n", s.target,
                  number(h.value).c_str(), people.empty() ? "the kernel's top level" : people.c_str(), h.lane,
                  said.empty() ? ", from no intermediate" : (" from " + said).c_str(),
                  (std::string(", in `") + s.text + "`").c_str(), static_cast<long long>(h.count.load()),
                  h.count.load() == 1 ? "" : "s");
      std::printf(
          "AOTI_TRACE {\"kind\": \"%s\", \"statement\": %d, \"target\": %s, \"text\": %s, \"value\": \"%s\", "
          "\"loops\": %s, \"lane\": %d, \"lanes\": %d, \"vector_loop\": %d, \"operands\": %s, \"count\": %lld, "
          "\"output\": %s}\n",
          kind == 0 ? "nan" : "inf", id, json_string(s.target).c_str(), json_string(s.text).c_str(), number(h.value).c_str(),
          element.c_str(), h.lane, h.lanes, s.vector_loop, operands.c_str(), static_cast<long long>(h.count.load()),
          output.c_str());
    }
  }
  std::printf("AOTI_TRACE_END {\"statements\": %d}\n", k_statement_count);
  std::fflush(stdout);
}
